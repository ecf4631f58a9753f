//! Recursive descent over [`Token`]s with JEXL 2.1.1's precedence, lowest
//! first: `?:` (conditional, right-associative) and `?:` (elvis), `||`,
//! `&&`, one optional `==`/`!=`, one optional `<`/`<=`/`>`/`>=` (JEXL does
//! not chain comparisons), `+ -`, `* / %`, unary `- !`. A script is one
//! expression, optionally followed by `;`.
//!
//! Depth (parentheses, unary operators, conditionals) is bounded by
//! [`MAX_SCRIPT_DEPTH`]; operator chains are flat, so evaluation recursion
//! is bounded too.

use super::ast::{ArithOp, CompareOp, Node};
use super::error::ScriptError;
use super::lexer::{Spanned, Token};
use crate::expression::limits::MAX_SCRIPT_DEPTH;

/// Parses tokens into the AST, collecting variable names in order of first
/// appearance (the AST refers to them by slot).
pub(super) struct Parser {
    tokens: Vec<Spanned>,
    pos: usize,
    depth: usize,
    pub(super) variables: Vec<String>,
}

impl Parser {
    pub(super) fn new(tokens: Vec<Spanned>) -> Self {
        Parser {
            tokens,
            pos: 0,
            depth: 0,
            variables: Vec::new(),
        }
    }

    /// The whole script: an expression, an optional `;`, the end.
    pub(super) fn script(&mut self) -> Result<Node, ScriptError> {
        let root = self.expression()?;
        if self.peek() == &Token::Semicolon {
            self.pos += 1;
        }
        match self.peek() {
            Token::End => Ok(root),
            Token::Unsupported(what) => Err(self.unsupported(what)),
            _ if root_continues(self.peek()) => Err(self.unexpected()),
            _ => Err(ScriptError::Unsupported {
                column: self.column(),
                what: "more than one statement",
            }),
        }
    }

    fn peek(&self) -> &Token {
        // The lexer always ends the list with `End`; past it stays `End`.
        self.tokens
            .get(self.pos)
            .map_or(&Token::End, |spanned| &spanned.token)
    }

    fn column(&self) -> usize {
        self.tokens
            .get(self.pos)
            .or(self.tokens.last())
            .map_or(1, |spanned| spanned.column)
    }

    fn unexpected(&self) -> ScriptError {
        ScriptError::Unexpected {
            column: self.column(),
            found: self.peek().describe(),
        }
    }

    fn unsupported(&self, what: &'static str) -> ScriptError {
        ScriptError::Unsupported {
            column: self.column(),
            what,
        }
    }

    fn expect(&mut self, token: &Token) -> Result<(), ScriptError> {
        if self.peek() == token {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.unexpected())
        }
    }

    fn enter(&mut self) -> Result<(), ScriptError> {
        self.depth += 1;
        if self.depth > MAX_SCRIPT_DEPTH {
            return Err(ScriptError::TooDeep {
                max: MAX_SCRIPT_DEPTH,
            });
        }
        Ok(())
    }

    /// `or ( '?' expression ':' expression | '?:' expression )?`
    fn expression(&mut self) -> Result<Node, ScriptError> {
        self.enter()?;
        let test = self.or()?;
        let node = match self.peek() {
            Token::Question => {
                self.pos += 1;
                let then = self.expression()?;
                self.expect(&Token::Colon)?;
                let otherwise = self.expression()?;
                Node::Conditional {
                    test: Box::new(test),
                    then: Box::new(then),
                    otherwise: Box::new(otherwise),
                }
            }
            Token::Elvis => {
                self.pos += 1;
                let otherwise = self.expression()?;
                Node::Elvis {
                    test: Box::new(test),
                    otherwise: Box::new(otherwise),
                }
            }
            _ => test,
        };
        self.depth -= 1;
        Ok(node)
    }

    fn or(&mut self) -> Result<Node, ScriptError> {
        let mut terms = vec![self.and()?];
        while self.peek() == &Token::OrOr {
            self.pos += 1;
            terms.push(self.and()?);
        }
        Ok(single_or(terms, Node::Or))
    }

    fn and(&mut self) -> Result<Node, ScriptError> {
        let mut terms = vec![self.equality()?];
        while self.peek() == &Token::AndAnd {
            self.pos += 1;
            terms.push(self.equality()?);
        }
        Ok(single_or(terms, Node::And))
    }

    fn equality(&mut self) -> Result<Node, ScriptError> {
        let left = self.relational()?;
        let op = match self.peek() {
            Token::EqEq => CompareOp::Equal,
            Token::NotEq => CompareOp::NotEqual,
            _ => return Ok(left),
        };
        self.pos += 1;
        let right = self.relational()?;
        Ok(Node::Compare {
            op,
            left: Box::new(left),
            right: Box::new(right),
        })
    }

    fn relational(&mut self) -> Result<Node, ScriptError> {
        let left = self.additive()?;
        let op = match self.peek() {
            Token::Less => CompareOp::Less,
            Token::LessEq => CompareOp::LessOrEqual,
            Token::Greater => CompareOp::Greater,
            Token::GreaterEq => CompareOp::GreaterOrEqual,
            _ => return Ok(left),
        };
        self.pos += 1;
        let right = self.additive()?;
        Ok(Node::Compare {
            op,
            left: Box::new(left),
            right: Box::new(right),
        })
    }

    fn additive(&mut self) -> Result<Node, ScriptError> {
        let first = self.multiplicative()?;
        let mut rest = Vec::new();
        loop {
            let op = match self.peek() {
                Token::Plus => ArithOp::Add,
                Token::Minus => ArithOp::Subtract,
                _ => break,
            };
            self.pos += 1;
            rest.push((op, self.multiplicative()?));
        }
        Ok(chain(first, rest))
    }

    fn multiplicative(&mut self) -> Result<Node, ScriptError> {
        let first = self.unary()?;
        let mut rest = Vec::new();
        loop {
            let op = match self.peek() {
                Token::Star => ArithOp::Multiply,
                Token::Slash => ArithOp::Divide,
                Token::Percent => ArithOp::Modulo,
                _ => break,
            };
            self.pos += 1;
            rest.push((op, self.unary()?));
        }
        Ok(chain(first, rest))
    }

    fn unary(&mut self) -> Result<Node, ScriptError> {
        let wrap: fn(Box<Node>) -> Node = match self.peek() {
            Token::Minus => Node::Negate,
            Token::Bang => Node::Not,
            _ => return self.primary(),
        };
        self.pos += 1;
        self.enter()?;
        let operand = self.unary()?;
        self.depth -= 1;
        Ok(wrap(Box::new(operand)))
    }

    fn primary(&mut self) -> Result<Node, ScriptError> {
        let node = match self.peek().clone() {
            Token::Number(v) => Node::Literal(v),
            Token::True => Node::Literal(crate::expression::jexl::Value::Bool(true)),
            Token::False => Node::Literal(crate::expression::jexl::Value::Bool(false)),
            Token::Ident(name) => {
                if self.tokens.get(self.pos + 1).map(|s| &s.token) == Some(&Token::LParen) {
                    return Err(self.unsupported("a function call"));
                }
                let slot = match self.variables.iter().position(|v| *v == name) {
                    Some(slot) => slot,
                    None => {
                        self.variables.push(name);
                        self.variables.len() - 1
                    }
                };
                Node::Variable(slot)
            }
            Token::LParen => {
                self.pos += 1;
                let inner = self.expression()?;
                self.expect(&Token::RParen)?;
                return Ok(inner);
            }
            Token::Unsupported(what) => return Err(self.unsupported(what)),
            _ => return Err(self.unexpected()),
        };
        self.pos += 1;
        Ok(node)
    }
}

/// Whether a token could only continue an expression (so stopping before it
/// is a syntax error rather than a second statement).
fn root_continues(token: &Token) -> bool {
    !matches!(
        token,
        Token::Number(_) | Token::Ident(_) | Token::True | Token::False | Token::LParen
    )
}

fn single_or(mut terms: Vec<Node>, many: fn(Vec<Node>) -> Node) -> Node {
    if terms.len() == 1
        && let Some(only) = terms.pop()
    {
        return only;
    }
    many(terms)
}

fn chain(first: Node, rest: Vec<(ArithOp, Node)>) -> Node {
    if rest.is_empty() {
        first
    } else {
        Node::Chain {
            first: Box::new(first),
            rest,
        }
    }
}
