//! The parsed form of a script: [`Node`] and its operators.

use crate::expression::jexl::Value;

/// `+ - * / %`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArithOp {
    Add,
    Subtract,
    Multiply,
    Divide,
    Modulo,
}

/// `== != < <= > >=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CompareOp {
    Equal,
    NotEqual,
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
}

/// A node of the parsed script.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    Literal(Value),
    /// A variable, by its slot in [`Script::variables`].
    Variable(usize),
    Negate(Box<Node>),
    Not(Box<Node>),
    /// `first op x op y …`, evaluated left to right (one precedence level).
    Chain {
        first: Box<Node>,
        rest: Vec<(ArithOp, Node)>,
    },
    Compare {
        op: CompareOp,
        left: Box<Node>,
        right: Box<Node>,
    },
    /// `x && y && …`, short-circuit, a boolean.
    And(Vec<Node>),
    /// `x || y || …`, short-circuit, a boolean.
    Or(Vec<Node>),
    /// `test ? then : otherwise`.
    Conditional {
        test: Box<Node>,
        then: Box<Node>,
        otherwise: Box<Node>,
    },
    /// `test ?: otherwise`: the test's own value when it is true.
    Elvis {
        test: Box<Node>,
        otherwise: Box<Node>,
    },
}
