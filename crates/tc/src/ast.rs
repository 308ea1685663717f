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
    Loop(LoopAst),
    If(IfAst),
}

impl StmtAst {
    /// The whole statement, a region from its left side to its last `}`.
    pub fn span(&self) -> Span {
        match self {
            StmtAst::Comp(c) => c.span,
            StmtAst::Call(c) => c.span,
            StmtAst::Loop(l) => l.span,
            StmtAst::If(b) => b.span,
        }
    }

    /// The names the statement writes in its own block: a comprehension's
    /// left side, a call's or a region's results.
    pub fn written(&self) -> Vec<&Ident> {
        match self {
            StmtAst::Comp(c) => vec![&c.lhs],
            StmtAst::Call(c) => c.results.iter().collect(),
            StmtAst::Loop(l) => l.results.iter().collect(),
            StmtAst::If(b) => b.results.iter().collect(),
        }
    }
}

/// `(r, ..) = for k in 0:COUNT while COND carry (T(..) p = init, ..) {
/// body; yield (y, ..) }`.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopAst {
    pub results: Vec<Ident>,
    /// The `for` keyword, where messages about the loop as a whole point.
    pub keyword: Span,
    pub index: Ident,
    pub count: Option<ExprAst>,
    pub cond: Option<ExprAst>,
    pub carried: Vec<CarriedAst>,
    pub body: BlockAst,
    pub span: Span,
}

/// One carried tensor of a loop: `float(N) p = init`.
#[derive(Clone, Debug, PartialEq)]
pub struct CarriedAst {
    pub ty: TypeAst,
    pub param: Ident,
    pub init: Ident,
}

/// `(r, ..) = if COND { ..; yield (a, ..) } else { ..; yield (b, ..) }`.
#[derive(Clone, Debug, PartialEq)]
pub struct IfAst {
    pub results: Vec<Ident>,
    /// The `if` keyword.
    pub keyword: Span,
    pub cond: ExprAst,
    pub then_body: BlockAst,
    pub else_body: BlockAst,
    pub span: Span,
}

/// A region's body: statements, then `yield` and the names it yields.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockAst {
    pub stmts: Vec<StmtAst>,
    pub yields: Vec<Ident>,
    /// The `yield` statement (the block's closing `}` when it has none,
    /// which the parser reports).
    pub yield_span: Span,
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
