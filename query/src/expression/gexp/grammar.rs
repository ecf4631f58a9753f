//! The grammar of `exp=` (OpenTSDB's JavaCC `SyntaxChecker`, `parser.jj`):
//!
//! ```text
//! EXPRESSION := NAME '(' PARAMETER (',' PARAMETER)* ')'
//! PARAMETER  := EXPRESSION | METRIC | NAME
//! METRIC     := NAME ':' [NAME ':'] [NAME ':'] NAME ['{' NAME '=' NAME (',' NAME '=' NAME)* '}']
//! NAME       := one or more of  * a-z A-Z 0-9 - _ # / $ @ | . ' [ ]
//! ```
//!
//! Whitespace between tokens is skipped. A metric parameter is rebuilt as
//! an `m=` query string (`sum:1m-avg:if.bytes_in{host=*}`) and parsed later
//! like `/api/query`'s. A function name is looked up as soon as it is read
//! ("Function … has not been implemented"), like the grammar's action
//! does. Text after the root expression's `)` is ignored, as the grammar
//! (which has no end-of-input rule) ignores it.

use crate::expression::error::ExpressionError;
use crate::expression::gexp::functions::Function;
use crate::expression::limits::{MAX_GEXP_ARGUMENTS, MAX_GEXP_DEPTH, MAX_GEXP_METRICS};

/// A function call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Call {
    pub function: Function,
    pub args: Vec<Arg>,
    /// The call as written (for messages).
    pub text: String,
}

/// A call's parameter.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Arg {
    /// A nested call.
    Call(Call),
    /// A metric query, by its position in the list [`parse`] fills.
    Metric(usize),
    /// A function parameter (a number, a quoted window, an alias).
    Param(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Name(String),
    LParen,
    RParen,
    Comma,
    Colon,
    LBrace,
    RBrace,
    Equals,
    /// `&&`: a token of the grammar no rule uses.
    AndAnd,
    End,
}

impl Token {
    fn describe(&self) -> String {
        match self {
            Token::Name(name) => format!("\"{name}\""),
            Token::LParen => "\"(\"".into(),
            Token::RParen => "\")\"".into(),
            Token::Comma => "\",\"".into(),
            Token::Colon => "\":\"".into(),
            Token::LBrace => "\"{\"".into(),
            Token::RBrace => "\"}\"".into(),
            Token::Equals => "\"=\"".into(),
            Token::AndAnd => "\"&&\"".into(),
            Token::End => "<EOF>".into(),
        }
    }
}

/// A token and the character range it covers.
#[derive(Debug, Clone)]
struct Spanned {
    token: Token,
    start: usize,
    end: usize,
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            '*' | '-' | '_' | '#' | '/' | '$' | '@' | '|' | '.' | '\'' | '[' | ']'
        )
}

/// Parses one `exp=` text; its metric queries are appended to `metrics`.
pub(crate) fn parse(text: &str, metrics: &mut Vec<String>) -> Result<Call, ExpressionError> {
    let chars: Vec<char> = text.chars().collect();
    let tokens = tokenize(&chars).map_err(|detail| syntax(text, detail))?;
    let mut parser = Parser {
        chars: &chars,
        tokens,
        pos: 0,
        metrics,
        text,
    };
    parser.expression(1)
}

fn syntax(text: &str, detail: String) -> ExpressionError {
    ExpressionError::Syntax {
        expr: text.to_string(),
        detail,
    }
}

fn tokenize(chars: &[char]) -> Result<Vec<Spanned>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if matches!(c, ' ' | '\t' | '\n' | '\r') {
            i += 1;
            continue;
        }
        let (token, len) = match c {
            '(' => (Token::LParen, 1),
            ')' => (Token::RParen, 1),
            ',' => (Token::Comma, 1),
            ':' => (Token::Colon, 1),
            '{' => (Token::LBrace, 1),
            '}' => (Token::RBrace, 1),
            '=' => (Token::Equals, 1),
            '&' if chars.get(i + 1) == Some(&'&') => (Token::AndAnd, 2),
            c if is_name_char(c) => {
                let len = chars[i..].iter().take_while(|c| is_name_char(**c)).count();
                (Token::Name(chars[i..i + len].iter().collect()), len)
            }
            other => {
                return Err(format!(
                    "Lexical error at column {}. Encountered: \"{other}\"",
                    i + 1
                ));
            }
        };
        out.push(Spanned {
            token,
            start: i,
            end: i + len,
        });
        i += len;
    }
    out.push(Spanned {
        token: Token::End,
        start: chars.len(),
        end: chars.len(),
    });
    Ok(out)
}

struct Parser<'a> {
    chars: &'a [char],
    tokens: Vec<Spanned>,
    pos: usize,
    metrics: &'a mut Vec<String>,
    text: &'a str,
}

impl Parser<'_> {
    fn peek_at(&self, offset: usize) -> &Token {
        self.tokens
            .get(self.pos + offset)
            .map_or(&Token::End, |s| &s.token)
    }

    fn unexpected(&self, wanted: &str) -> ExpressionError {
        let (found, column) = self
            .tokens
            .get(self.pos)
            .map_or(("<EOF>".to_string(), self.chars.len() + 1), |s| {
                (s.token.describe(), s.start + 1)
            });
        syntax(
            self.text,
            format!("Encountered {found} at column {column}. Was expecting {wanted}"),
        )
    }

    fn expect(&mut self, token: &Token, wanted: &str) -> Result<(), ExpressionError> {
        if self.peek_at(0) == token {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.unexpected(wanted))
        }
    }

    fn name(&mut self, wanted: &str) -> Result<String, ExpressionError> {
        match self.peek_at(0).clone() {
            Token::Name(name) => {
                self.pos += 1;
                Ok(name)
            }
            _ => Err(self.unexpected(wanted)),
        }
    }

    /// `NAME '(' PARAMETER (',' PARAMETER)* ')'`
    fn expression(&mut self, depth: usize) -> Result<Call, ExpressionError> {
        if depth > MAX_GEXP_DEPTH {
            return Err(syntax(
                self.text,
                format!("functions nest deeper than {MAX_GEXP_DEPTH} levels"),
            ));
        }
        let start = self.tokens.get(self.pos).map_or(0, |s| s.start);
        let name = self.name("a function name")?;
        let function = Function::from_name(&name).ok_or(ExpressionError::UnknownFunction(name))?;
        self.expect(&Token::LParen, "\"(\"")?;
        let mut args = vec![self.parameter(depth)?];
        while self.peek_at(0) == &Token::Comma {
            self.pos += 1;
            args.push(self.parameter(depth)?);
            if args.len() > MAX_GEXP_ARGUMENTS {
                return Err(ExpressionError::TooMany {
                    what: "parameters in a function call",
                    count: args.len(),
                    max: MAX_GEXP_ARGUMENTS,
                });
            }
        }
        let end = self.tokens.get(self.pos).map_or(start, |s| s.end);
        self.expect(&Token::RParen, "\",\" or \")\"")?;
        Ok(Call {
            function,
            args,
            text: self.chars[start..end.max(start)].iter().collect(),
        })
    }

    /// `EXPRESSION | METRIC | NAME`, told apart by the token after the name.
    fn parameter(&mut self, depth: usize) -> Result<Arg, ExpressionError> {
        if !matches!(self.peek_at(0), Token::Name(_)) {
            return Err(self.unexpected("a function, a metric query or a parameter"));
        }
        match self.peek_at(1) {
            Token::LParen => Ok(Arg::Call(self.expression(depth + 1)?)),
            Token::Colon => {
                let metric = self.metric()?;
                if self.metrics.len() >= MAX_GEXP_METRICS {
                    return Err(ExpressionError::TooMany {
                        what: "metric queries",
                        count: self.metrics.len() + 1,
                        max: MAX_GEXP_METRICS,
                    });
                }
                self.metrics.push(metric);
                Ok(Arg::Metric(self.metrics.len() - 1))
            }
            _ => Ok(Arg::Param(self.name("a parameter")?)),
        }
    }

    /// `agg:[interval-agg:][rate:]metric[{tagk=tagv,…}]`, rebuilt as text.
    fn metric(&mut self) -> Result<String, ExpressionError> {
        let mut out = self.name("an aggregator")?;
        self.expect(&Token::Colon, "\":\"")?;
        out.push(':');
        for _ in 0..2 {
            if matches!(self.peek_at(0), Token::Name(_)) && self.peek_at(1) == &Token::Colon {
                out.push_str(&self.name("a modifier")?);
                self.pos += 1;
                out.push(':');
            }
        }
        out.push_str(&self.name("a metric name")?);
        if self.peek_at(0) == &Token::LBrace {
            self.pos += 1;
            let mut pairs = Vec::new();
            loop {
                let key = self.name("a tag key")?;
                self.expect(&Token::Equals, "\"=\"")?;
                let value = self.name("a tag value")?;
                pairs.push(format!("{key}={value}"));
                if self.peek_at(0) == &Token::Comma {
                    self.pos += 1;
                } else {
                    break;
                }
            }
            self.expect(&Token::RBrace, "\",\" or \"}\"")?;
            out.push('{');
            out.push_str(&pairs.join(","));
            out.push('}');
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> (Call, Vec<String>) {
        let mut metrics = Vec::new();
        let call = parse(text, &mut metrics).unwrap();
        (call, metrics)
    }

    fn failure(text: &str) -> ExpressionError {
        parse(text, &mut Vec::new()).unwrap_err()
    }

    #[test]
    fn documented_forms() {
        let (call, metrics) = parsed("scale(sum:if.bytes_in{host=*},1024)");
        assert_eq!(call.function, Function::Scale);
        assert_eq!(call.args, [Arg::Metric(0), Arg::Param("1024".into())]);
        assert_eq!(metrics, ["sum:if.bytes_in{host=*}"]);
        let (call, metrics) =
            parsed(" sum ( sum:if.bytes_in{host=*} , sum:if.bytes_out{host=*} ) ");
        assert_eq!(call.function, Function::SumSeries);
        assert_eq!(call.args, [Arg::Metric(0), Arg::Metric(1)]);
        assert_eq!(metrics.len(), 2);
        let (call, metrics) = parsed(
            "movingAverage(scale(sum:1m-avg:rate:sys.cpu{host=web01|web02,dc=lga},2),'5min')",
        );
        assert_eq!(
            metrics,
            ["sum:1m-avg:rate:sys.cpu{host=web01|web02,dc=lga}"]
        );
        let Arg::Call(inner) = &call.args[0] else {
            panic!("{call:?}")
        };
        assert_eq!(
            inner.text,
            "scale(sum:1m-avg:rate:sys.cpu{host=web01|web02,dc=lga},2)"
        );
        assert_eq!(call.args[1], Arg::Param("'5min'".into()));
        // text after the root call is ignored, as the grammar does
        assert_eq!(parsed("absolute(sum:m) whatever").0.args, [Arg::Metric(0)]);
    }

    #[test]
    fn syntax_errors() {
        assert_eq!(
            failure("foo(sum:m)"),
            ExpressionError::UnknownFunction("foo".into())
        );
        assert_eq!(
            failure("Scale(sum:m,2)"),
            ExpressionError::UnknownFunction("Scale".into())
        );
        let ExpressionError::Syntax { expr, detail } = failure("scale(sum:m,2") else {
            panic!()
        };
        assert_eq!(expr, "scale(sum:m,2");
        assert!(
            detail.starts_with("Encountered <EOF> at column 14"),
            "{detail}"
        );
        assert!(matches!(failure("scale()"), ExpressionError::Syntax { .. }));
        assert!(matches!(
            failure("scale(sum:m{host=wildcard(x)},2)"),
            ExpressionError::Syntax { .. }
        ));
        assert!(matches!(
            failure("scale(sum:m{},2)"),
            ExpressionError::Syntax { .. }
        ));
        assert!(matches!(
            failure("scale(sum:a:b:c:d,2)"),
            ExpressionError::Syntax { .. }
        ));
        let ExpressionError::Syntax { detail, .. } = failure("scale(sum:m,%)") else {
            panic!()
        };
        assert!(detail.starts_with("Lexical error at column 13"), "{detail}");
        let deep = format!("{}sum:m{}", "absolute(".repeat(20), ")".repeat(20));
        assert!(matches!(failure(&deep), ExpressionError::Syntax { .. }));
    }
}
