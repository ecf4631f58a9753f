//! The scripts of `/api/query/exp` expressions: the subset of JEXL 2.1.1
//! that computes over numbers — numeric and boolean literals, variables,
//! `+ - * / %`, comparisons, `&& || !` (and JEXL's word forms `and or not
//! eq ne lt le gt ge div mod`), `c ? x : y`, `x ?: y` and parentheses —
//! parsed once ([`Script::parse`]) and evaluated per point
//! ([`Script::evaluate`]) with [`crate::expression::jexl`]'s arithmetic.
//!
//! Everything else JEXL parses (strings, assignments, function and method
//! calls, bitwise and regex operators, several statements) is rejected
//! when the request is parsed, naming the construct: none of it computes a
//! number from series values.

mod ast;
mod error;
mod lexer;
mod parser;

pub(crate) use ast::{ArithOp, CompareOp, Node};
pub(crate) use error::ScriptError;

use crate::expression::jexl::{ArithmeticError, Value};
use crate::expression::limits::MAX_SCRIPT_CHARS;

/// A parsed script and its variables (in order of first appearance).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Script {
    root: Node,
    variables: Vec<String>,
}

impl Script {
    /// Parses `text` (at most [`MAX_SCRIPT_CHARS`] characters).
    pub(crate) fn parse(text: &str) -> Result<Script, ScriptError> {
        let len = text.chars().count();
        if len > MAX_SCRIPT_CHARS {
            return Err(ScriptError::TooLong {
                len,
                max: MAX_SCRIPT_CHARS,
            });
        }
        let mut parser = parser::Parser::new(lexer::tokenize(text)?);
        let root = parser.script()?;
        Ok(Script {
            root,
            variables: parser.variables,
        })
    }

    /// The variable names, slot by slot.
    pub(crate) fn variables(&self) -> &[String] {
        &self.variables
    }

    /// Evaluates the script with `slots[i]` bound to variable `i` (as a
    /// JEXL `Double`).
    pub(crate) fn evaluate(&self, slots: &[f64]) -> Result<Value, ArithmeticError> {
        eval(&self.root, slots)
    }
}

fn eval(node: &Node, slots: &[f64]) -> Result<Value, ArithmeticError> {
    Ok(match node {
        Node::Literal(v) => *v,
        Node::Variable(slot) => Value::Double(slots.get(*slot).copied().unwrap_or(f64::NAN)),
        Node::Negate(inner) => eval(inner, slots)?.negate(),
        Node::Not(inner) => Value::Bool(!eval(inner, slots)?.truthy()),
        Node::Chain { first, rest } => {
            let mut acc = eval(first, slots)?;
            for (op, operand) in rest {
                let right = eval(operand, slots)?;
                acc = match op {
                    ArithOp::Add => acc.add(right)?,
                    ArithOp::Subtract => acc.subtract(right)?,
                    ArithOp::Multiply => acc.multiply(right)?,
                    ArithOp::Divide => acc.divide(right),
                    ArithOp::Modulo => acc.modulo(right),
                };
            }
            acc
        }
        Node::Compare { op, left, right } => {
            let (l, r) = (eval(left, slots)?, eval(right, slots)?);
            let ordering = l.compare(r);
            Value::Bool(match op {
                CompareOp::Equal => l.equals(r),
                CompareOp::NotEqual => !l.equals(r),
                CompareOp::Less => ordering.is_lt(),
                CompareOp::LessOrEqual => ordering.is_le(),
                CompareOp::Greater => ordering.is_gt(),
                CompareOp::GreaterOrEqual => ordering.is_ge(),
            })
        }
        Node::And(terms) => {
            for term in terms {
                if !eval(term, slots)?.truthy() {
                    return Ok(Value::Bool(false));
                }
            }
            Value::Bool(true)
        }
        Node::Or(terms) => {
            for term in terms {
                if eval(term, slots)?.truthy() {
                    return Ok(Value::Bool(true));
                }
            }
            Value::Bool(false)
        }
        Node::Conditional {
            test,
            then,
            otherwise,
        } => {
            if eval(test, slots)?.truthy() {
                eval(then, slots)?
            } else {
                eval(otherwise, slots)?
            }
        }
        Node::Elvis { test, otherwise } => {
            let value = eval(test, slots)?;
            if value.truthy() {
                value
            } else {
                eval(otherwise, slots)?
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, slots: &[f64]) -> Value {
        Script::parse(text).unwrap().evaluate(slots).unwrap()
    }

    #[test]
    fn precedence_and_variables() {
        let s = Script::parse("a + (b * b)").unwrap();
        assert_eq!(s.variables(), ["a", "b"]);
        // OpenTSDB's doubleVariableAndPrecedence: 1 + 11*11 = 122
        assert_eq!(s.evaluate(&[1.0, 11.0]), Ok(Value::Double(122.0)));
        // ... and (1 + 11) * 11 = 132
        assert_eq!(run("(a + b) * b", &[1.0, 11.0]), Value::Double(132.0));
        assert_eq!(run("a - b - c", &[10.0, 3.0, 2.0]), Value::Double(5.0));
        assert_eq!(run("a / b * c", &[8.0, 2.0, 3.0]), Value::Double(12.0));
        assert_eq!(run("-a + 2 * -b", &[1.0, 2.0]), Value::Double(-5.0));
        let s = Script::parse("(((a + b + c) - c) / (a + b + c)) * 100").unwrap();
        assert_eq!(s.variables(), ["a", "b", "c"]);
    }

    #[test]
    fn jexl_quirks() {
        // division by zero is zero, integer literals divide as integers
        assert_eq!(run("a / 0", &[5.0]), Value::Double(0.0));
        assert_eq!(run("a * (1 / 2)", &[5.0]), Value::Double(0.0));
        assert_eq!(run("a * (1.0 / 2)", &[5.0]), Value::Double(2.5));
        assert_eq!(run("a % 3", &[7.0]), Value::Double(1.0));
        // comparisons and logic give booleans; a conditional keeps its type
        assert_eq!(run("a > b", &[2.0, 1.0]), Value::Bool(true));
        assert_eq!(run("a lt b and b ne 0", &[1.0, 2.0]), Value::Bool(true));
        assert_eq!(run("a > 0 ? 1 : 0", &[1.0]), Value::Int(1));
        assert_eq!(run("a ?: b", &[0.0, 7.0]), Value::Double(7.0));
        assert_eq!(run("a ?: b", &[3.0, 7.0]), Value::Double(3.0));
        assert_eq!(run("!a", &[f64::NAN]), Value::Bool(true));
        assert_eq!(run("a;", &[1.0]), Value::Double(1.0));
        assert_eq!(
            Script::parse("(a > b) + 1").unwrap().evaluate(&[1.0, 0.0]),
            Err(ArithmeticError::AddSubtract)
        );
    }

    #[test]
    fn rejections() {
        let err = |t: &str| Script::parse(t).unwrap_err().to_string();
        assert_eq!(
            err(" a / "),
            "parsing error at column 6: unexpected end of expression"
        );
        assert!(err("a = 1").contains("assignment"), "{}", err("a = 1"));
        assert!(err("a.b").contains("member access"));
        assert!(err("max(a, b)").contains("function call"));
        assert!(err("'x' + a").contains("a string"));
        assert!(err("a & b").contains("bitwise"));
        assert!(err("a; b").contains("more than one statement"));
        assert!(err("a < b < c").contains("unexpected '<'"));
        assert!(err("a b").contains("more than one statement"));
        assert!(err("a + #").contains("unexpected character '#'"));
        let deep = format!("{}a{}", "(".repeat(70), ")".repeat(70));
        assert_eq!(
            Script::parse(&deep).unwrap_err(),
            ScriptError::TooDeep {
                max: crate::expression::limits::MAX_SCRIPT_DEPTH
            }
        );
        let long = "a+".repeat(3000) + "a";
        assert!(matches!(
            Script::parse(&long).unwrap_err(),
            ScriptError::TooLong { .. }
        ));
    }

    #[test]
    fn long_chains_are_flat() {
        let text = "a+".repeat(2000) + "a";
        assert_eq!(run(&text, &[1.0]), Value::Double(2001.0));
    }
}
