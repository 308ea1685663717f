//! The syntax tree the parser produces: TC as written, with spans, before
//! name resolution and typing.

use crate::diag::Span;
use ir::{BinOp, DType, Reduction, UnOp};

#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct File {
    pub defs: Vec<DefAst>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DefAst {
    pub name: Ident,
    pub params: Vec<ParamAst>,
    pub returns: Vec<ReturnAst>,
    pub stmts: Vec<StmtAst>,
    pub span: Span,
}

/// `float`, `int32(N, 3)`, `float()`.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeAst {
    pub dtype: DType,
    pub span: Span,
    /// `None` for a scalar type; `Some` (possibly empty) for a tensor type.
    pub dims: Option<Vec<DimAst>>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum DimAst {
    Sym(Ident),
    Const(i64, Span),
    /// Any other size expression (allowed in result types only).
    Expr(ExprAst),
}

#[derive(Clone, Debug, PartialEq)]
pub struct ParamAst {
    pub ty: TypeAst,
    pub name: Ident,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ReturnAst {
    pub ty: Option<TypeAst>,
    pub name: Ident,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtAst {
    Comp(CompAst),
    Call(CallAst),
}

#[derive(Clone, Debug, PartialEq)]
pub struct CompAst {
    pub lhs: Ident,
    pub indices: Vec<Ident>,
    pub op: Reduction,
    pub init: bool,
    pub op_span: Span,
    pub body: ExprAst,
    pub wheres: Vec<WhereAst>,
    /// TC's `<=> f(A(i,k), B(k,j))`: the statement computes what def `f`
    /// computes on those tensors.
    pub equiv: Option<EquivAst>,
    pub span: Span,
}

/// The right side of a `<=>` annotation.
#[derive(Clone, Debug, PartialEq)]
pub struct EquivAst {
    pub callee: Ident,
    pub args: Vec<ExprAst>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum WhereAst {
    Range {
        iter: Ident,
        lo: ExprAst,
        hi: ExprAst,
    },
    Let {
        name: Ident,
        value: ExprAst,
    },
    Exists(ExprAst),
}

#[derive(Clone, Debug, PartialEq)]
pub struct CallAst {
    pub results: Vec<Ident>,
    pub callee: Ident,
    pub args: Vec<ExprAst>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ExprAst {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Int(i64),
    Float(f64),
    Bool(bool),
    Name(String),
    /// `T.d`: the size of dimension `d` of tensor `T`.
    Dim(Ident, i64),
    /// `f(args)`: a tensor read, a builtin call or a conversion.
    Apply(Ident, Vec<ExprAst>),
    Unary(UnOp, Box<ExprAst>),
    Binary(BinOp, Box<ExprAst>, Box<ExprAst>),
    Select(Box<ExprAst>, Box<ExprAst>, Box<ExprAst>),
}
