//! Tokens of the JEXL 2.1.1 grammar (`Parser.jjt`), longest match first,
//! keywords over identifiers. Tokens JEXL has but OpenTSDB expressions have
//! no use for (strings, assignment, bitwise and regex operators, blocks,
//! member access) come out as [`Token::Unsupported`] so the parser can name
//! them.

use super::error::ScriptError;
use crate::expression::jexl::{Value, float_literal};

/// One token and the 1-based column it starts at.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Spanned {
    pub token: Token,
    pub column: usize,
}

/// A JEXL token.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Token {
    Number(Value),
    Ident(String),
    True,
    False,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    EqEq,
    NotEq,
    Less,
    LessEq,
    Greater,
    GreaterEq,
    AndAnd,
    OrOr,
    Bang,
    LParen,
    RParen,
    Question,
    Colon,
    Elvis,
    Semicolon,
    /// A JEXL construct outside the subset; the text names it.
    Unsupported(&'static str),
    End,
}

impl Token {
    /// How an error message shows the token.
    pub(super) fn describe(&self) -> String {
        match self {
            Token::Number(v) => format!("number {}", v.to_double()),
            Token::Ident(name) => format!("'{name}'"),
            Token::End => "end of expression".to_string(),
            Token::Unsupported(what) => (*what).to_string(),
            other => format!("'{}'", other.symbol()),
        }
    }

    fn symbol(&self) -> &'static str {
        match self {
            Token::True => "true",
            Token::False => "false",
            Token::Plus => "+",
            Token::Minus => "-",
            Token::Star => "*",
            Token::Slash => "/",
            Token::Percent => "%",
            Token::EqEq => "==",
            Token::NotEq => "!=",
            Token::Less => "<",
            Token::LessEq => "<=",
            Token::Greater => ">",
            Token::GreaterEq => ">=",
            Token::AndAnd => "&&",
            Token::OrOr => "||",
            Token::Bang => "!",
            Token::LParen => "(",
            Token::RParen => ")",
            Token::Question => "?",
            Token::Colon => ":",
            Token::Elvis => "?:",
            Token::Semicolon => ";",
            _ => "",
        }
    }
}

/// Splits `text` into tokens, ending with [`Token::End`].
pub(super) fn tokenize(text: &str) -> Result<Vec<Spanned>, ScriptError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let column = i + 1;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let next = chars.get(i + 1).copied();
        let (token, len) = if c.is_ascii_digit() {
            number(&chars[i..], column)?
        } else if c.is_ascii_alphabetic() || c == '_' || c == '$' || c == '@' {
            let len = chars[i..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '@'))
                .count();
            let word: String = chars[i..i + len].iter().collect();
            (word_token(word), len)
        } else {
            match (c, next) {
                ('=', Some('=')) => (Token::EqEq, 2),
                ('=', Some('~')) => (Token::Unsupported("the regex operator '=~'"), 2),
                ('=', _) => (Token::Unsupported("assignment '='"), 1),
                ('!', Some('=')) => (Token::NotEq, 2),
                ('!', Some('~')) => (Token::Unsupported("the regex operator '!~'"), 2),
                ('!', _) => (Token::Bang, 1),
                ('<', Some('=')) => (Token::LessEq, 2),
                ('<', _) => (Token::Less, 1),
                ('>', Some('=')) => (Token::GreaterEq, 2),
                ('>', _) => (Token::Greater, 1),
                ('&', Some('&')) => (Token::AndAnd, 2),
                ('|', Some('|')) => (Token::OrOr, 2),
                ('&' | '|' | '^' | '~', _) => (Token::Unsupported("a bitwise operator"), 1),
                ('?', Some(':')) => (Token::Elvis, 2),
                ('?', _) => (Token::Question, 1),
                (':', _) => (Token::Colon, 1),
                (';', _) => (Token::Semicolon, 1),
                ('(', _) => (Token::LParen, 1),
                (')', _) => (Token::RParen, 1),
                ('+', _) => (Token::Plus, 1),
                ('-', _) => (Token::Minus, 1),
                ('*', _) => (Token::Star, 1),
                ('/', _) => (Token::Slash, 1),
                ('%', _) => (Token::Percent, 1),
                ('"' | '\'', _) => (Token::Unsupported("a string"), 1),
                ('{' | '}', _) => (Token::Unsupported("a block or map"), 1),
                ('[' | ']', _) => (Token::Unsupported("an array"), 1),
                ('.', _) => (Token::Unsupported("member access '.'"), 1),
                (',', _) => (Token::Unsupported("a list ','"), 1),
                _ => return Err(ScriptError::Lexical { column, found: c }),
            }
        };
        out.push(Spanned { token, column });
        i += len;
    }
    out.push(Spanned {
        token: Token::End,
        column: chars.len() + 1,
    });
    Ok(out)
}

/// Keywords win over identifiers of the same text (JavaCC's rule).
fn word_token(word: String) -> Token {
    match word.as_str() {
        "true" => Token::True,
        "false" => Token::False,
        "and" => Token::AndAnd,
        "or" => Token::OrOr,
        "not" => Token::Bang,
        "eq" => Token::EqEq,
        "ne" => Token::NotEq,
        "lt" => Token::Less,
        "le" => Token::LessEq,
        "gt" => Token::Greater,
        "ge" => Token::GreaterEq,
        "div" => Token::Slash,
        "mod" => Token::Percent,
        "null" => Token::Unsupported("null"),
        "if" | "else" | "for" | "foreach" | "while" | "return" => Token::Unsupported("a statement"),
        "new" | "var" | "empty" | "size" => Token::Unsupported("a function"),
        _ => Token::Ident(word),
    }
}

/// `INTEGER_LITERAL` or `FLOAT_LITERAL` at the start of `chars`.
fn number(chars: &[char], column: usize) -> Result<(Token, usize), ScriptError> {
    let digits = |from: usize| {
        chars[from..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count()
    };
    let whole = digits(0);
    // FLOAT_LITERAL: digits '.' digits [e[+-]digits] [dDfFbB]
    if chars.get(whole) == Some(&'.') && chars.get(whole + 1).is_some_and(char::is_ascii_digit) {
        let mut len = whole + 1 + digits(whole + 1);
        if matches!(chars.get(len), Some('e' | 'E')) {
            let sign = usize::from(matches!(chars.get(len + 1), Some('+' | '-')));
            let exp = digits(len + 1 + sign);
            if exp > 0 {
                len += 1 + sign + exp;
            }
        }
        let text: String = chars[..len].iter().collect();
        let bad = || ScriptError::Number {
            column,
            text: text.clone(),
        };
        let token = match chars.get(len) {
            Some('d' | 'D') => {
                len += 1;
                Token::Number(Value::Double(text.parse().map_err(|_| bad())?))
            }
            Some('b' | 'B') => Token::Unsupported("a BigDecimal literal"),
            Some('f' | 'F') => {
                len += 1;
                Token::Number(Value::Float(float_literal(&text).ok_or_else(bad)?))
            }
            _ => Token::Number(Value::Float(float_literal(&text).ok_or_else(bad)?)),
        };
        return Ok((token, len));
    }
    // INTEGER_LITERAL: 0[0-7]* | [1-9][0-9]* | 0x[0-9a-f]+, then [lLhH]
    let (radix, start, len) = if chars[0] == '0' && matches!(chars.get(1), Some('x' | 'X')) {
        let hex = chars[2..]
            .iter()
            .take_while(|c| c.is_ascii_hexdigit())
            .count();
        if hex == 0 {
            return Err(ScriptError::Number {
                column,
                text: chars[..2].iter().collect(),
            });
        }
        (16, 2, 2 + hex)
    } else if chars[0] == '0' {
        let octal = chars[1..]
            .iter()
            .take_while(|c| matches!(c, '0'..='7'))
            .count();
        (8, 0, 1 + octal)
    } else {
        (10, 0, whole)
    };
    let text: String = chars[start..len].iter().collect();
    let bad = || ScriptError::Number {
        column,
        text: chars[..len].iter().collect(),
    };
    match chars.get(len) {
        Some('h' | 'H') => Ok((Token::Unsupported("a BigInteger literal"), len + 1)),
        suffix => {
            let value = i64::from_str_radix(&text, radix).map_err(|_| bad())?;
            let len = len + usize::from(matches!(suffix, Some('l' | 'L')));
            Ok((Token::Number(Value::Int(value)), len))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str) -> Vec<Token> {
        tokenize(text)
            .unwrap()
            .into_iter()
            .map(|s| s.token)
            .collect()
    }

    #[test]
    fn numbers_follow_jexl() {
        assert_eq!(
            tokens("12 1.5 2.5d 0x1F 017 3L"),
            vec![
                Token::Number(Value::Int(12)),
                Token::Number(Value::Float(1.5)),
                Token::Number(Value::Double(2.5)),
                Token::Number(Value::Int(31)),
                Token::Number(Value::Int(15)),
                Token::Number(Value::Int(3)),
                Token::End
            ]
        );
        // "1." is an integer then a '.', "1e5" an integer then an identifier
        assert_eq!(tokens("1.")[1], Token::Unsupported("member access '.'"));
        assert_eq!(tokens("1e5")[1], Token::Ident("e5".into()));
        assert_eq!(tokens("1.5e3")[0], Token::Number(Value::Float(1500.0)));
    }

    #[test]
    fn words_and_operators() {
        assert_eq!(
            tokens("a and not b div c mod d ?: e"),
            vec![
                Token::Ident("a".into()),
                Token::AndAnd,
                Token::Bang,
                Token::Ident("b".into()),
                Token::Slash,
                Token::Ident("c".into()),
                Token::Percent,
                Token::Ident("d".into()),
                Token::Elvis,
                Token::Ident("e".into()),
                Token::End
            ]
        );
        assert_eq!(tokens("andy")[0], Token::Ident("andy".into()));
        assert_eq!(
            tokenize("a # b").unwrap_err(),
            ScriptError::Lexical {
                column: 3,
                found: '#'
            }
        );
    }
}
