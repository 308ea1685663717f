//! Scalar expressions: comprehension bodies, subscripts, guards and lets.
//!
//! Expressions in the IR are explicitly typed: every literal carries its
//! type, conversions are explicit [`Expr::Cast`] nodes, and both operands of a
//! binary operation have the same type (the verifier checks this). Iterators,
//! size symbols and subscripts are `int64`.

use crate::{Builtin, DType};

/// A literal value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    Bool(bool),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    Neg,
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    /// Floor division on integers, true division on floats.
    Div,
    /// Floor modulo (the result has the sign of the divisor), on integers
    /// and floats alike, as Python's `%`.
    Mod,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}

impl BinOp {
    pub const ALL: [BinOp; 13] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::Mod,
        BinOp::Lt,
        BinOp::Le,
        BinOp::Gt,
        BinOp::Ge,
        BinOp::Eq,
        BinOp::Ne,
        BinOp::And,
        BinOp::Or,
    ];

    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }

    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne
        )
    }

    pub fn is_logical(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or)
    }

    /// Binding strength for printing and parsing; higher binds tighter.
    pub fn precedence(self) -> u8 {
        match self {
            BinOp::Or => 1,
            BinOp::And => 2,
            BinOp::Eq | BinOp::Ne => 3,
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 4,
            BinOp::Add | BinOp::Sub => 5,
            BinOp::Mul | BinOp::Div | BinOp::Mod => 6,
        }
    }
}

/// A scalar expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Lit(Value, DType),
    /// An iterator of the enclosing comprehension (`int64`).
    Iter(String),
    /// A size symbol (`int64`) or a scalar parameter (its declared type).
    Sym(String),
    /// A let binding of the enclosing comprehension.
    Local(String),
    /// `T(e1, ..., en)`; subscripts are `int64` expressions.
    Read(String, Vec<Expr>),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `c ? a : b`; only the chosen branch is evaluated.
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    Call(Builtin, Vec<Expr>),
    Cast(DType, Box<Expr>),
}

impl Expr {
    pub fn int(v: i64) -> Expr {
        Expr::Lit(Value::Int(v), DType::I64)
    }

    pub fn binary(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Binary(op, Box::new(a), Box::new(b))
    }

    /// The direct sub-expressions, in evaluation order.
    pub fn children(&self) -> Vec<&Expr> {
        match self {
            Expr::Lit(..) | Expr::Iter(_) | Expr::Sym(_) | Expr::Local(_) => Vec::new(),
            Expr::Read(_, ix) | Expr::Call(_, ix) => ix.iter().collect(),
            Expr::Unary(_, a) | Expr::Cast(_, a) => vec![a],
            Expr::Binary(_, a, b) => vec![a, b],
            Expr::Select(c, a, b) => vec![c, a, b],
        }
    }

    /// Visits this expression and every sub-expression, parents first.
    pub fn walk(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        for c in self.children() {
            c.walk(f);
        }
    }

    /// Whether any sub-expression satisfies `p`.
    pub fn any(&self, p: &dyn Fn(&Expr) -> bool) -> bool {
        let mut found = false;
        self.walk(&mut |e| found |= p(e));
        found
    }

    /// Every tensor read, outermost first, including reads in subscripts.
    pub fn reads(&self) -> Vec<(&str, &[Expr])> {
        let mut out = Vec::new();
        fn go<'a>(e: &'a Expr, out: &mut Vec<(&'a str, &'a [Expr])>) {
            if let Expr::Read(t, ix) = e {
                out.push((t.as_str(), ix.as_slice()));
            }
            for c in e.children() {
                go(c, out);
            }
        }
        go(self, &mut out);
        out
    }

    /// Whether the expression mentions iterator `name`.
    pub fn uses_iter(&self, name: &str) -> bool {
        self.any(&|e| matches!(e, Expr::Iter(n) if n == name))
    }

    /// Rewrites the tree bottom-up.
    pub fn map(self, f: &mut dyn FnMut(Expr) -> Expr) -> Expr {
        let e = match self {
            Expr::Read(t, ix) => Expr::Read(t, ix.into_iter().map(|x| x.map(f)).collect()),
            Expr::Call(b, ix) => Expr::Call(b, ix.into_iter().map(|x| x.map(f)).collect()),
            Expr::Unary(op, a) => Expr::Unary(op, Box::new(a.map(f))),
            Expr::Cast(t, a) => Expr::Cast(t, Box::new(a.map(f))),
            Expr::Binary(op, a, b) => Expr::Binary(op, Box::new(a.map(f)), Box::new(b.map(f))),
            Expr::Select(c, a, b) => {
                Expr::Select(Box::new(c.map(f)), Box::new(a.map(f)), Box::new(b.map(f)))
            }
            leaf => leaf,
        };
        f(e)
    }
}
