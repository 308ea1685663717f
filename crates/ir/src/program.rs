//! Programs, defs and statements.

use crate::{DType, Expr, SizeExpr, Value};

/// How deep calls may nest: a def that calls none is at level 0, a caller
/// one above its deepest callee, and no def may be above this level. The
/// checker enforces it, so every path that follows calls (the interpreter,
/// lowering's inlining) stays within a bounded depth.
pub const MAX_CALL_DEPTH: usize = 64;

/// A whole TC file (or an imported model): a list of defs.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Program {
    pub defs: Vec<Def>,
}

impl Program {
    pub fn def(&self, name: &str) -> Option<&Def> {
        self.defs.iter().find(|d| d.name == name)
    }
}

/// What a tensor is to its def.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorRole {
    /// A parameter that is not returned.
    Input,
    /// Returned and not a parameter.
    Output,
    /// A parameter that is also returned: updated with functional semantics
    /// (the caller's tensor is not modified; the result is a new tensor).
    InOut,
    /// Defined and used inside the def only.
    Temp,
}

/// A tensor known to a def: its element type and its (symbolic) shape.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorDecl {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<SizeExpr>,
    pub role: TensorRole,
}

/// A parameter of a def, in signature order.
#[derive(Clone, Debug, PartialEq)]
pub enum Param {
    /// A scalar (`float a`, `int32 s`); integer scalars may appear in sizes.
    Scalar { name: String, dtype: DType },
    /// A tensor parameter; its declaration is in [`Def::tensors`].
    Tensor(String),
}

impl Param {
    pub fn name(&self) -> &str {
        match self {
            Param::Scalar { name, .. } | Param::Tensor(name) => name,
        }
    }
}

/// A function: parameters, results, the tensors it knows, statements.
#[derive(Clone, Debug, PartialEq)]
pub struct Def {
    pub name: String,
    pub params: Vec<Param>,
    /// Returned tensors, in order; each has a declaration in `tensors`.
    pub outputs: Vec<String>,
    /// Every tensor: parameters, outputs and temporaries, in order of first
    /// appearance (parameters first).
    pub tensors: Vec<TensorDecl>,
    pub stmts: Vec<Stmt>,
}

impl Def {
    /// Whether any statement is a loop or branch region.
    pub fn has_regions(&self) -> bool {
        self.stmts.iter().any(Stmt::is_region)
    }

    pub fn tensor(&self, name: &str) -> Option<&TensorDecl> {
        self.tensors.iter().find(|t| t.name == name)
    }

    pub fn scalar(&self, name: &str) -> Option<DType> {
        self.params.iter().find_map(|p| match p {
            Param::Scalar { name: n, dtype } if n == name => Some(*dtype),
            _ => None,
        })
    }

    /// Size symbols, in order of first appearance in parameter shapes.
    pub fn size_symbols(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in &self.params {
            if let Param::Tensor(t) = p {
                if let Some(decl) = self.tensor(t) {
                    for d in &decl.shape {
                        for s in d.symbols() {
                            if !out.contains(&s) && self.scalar(&s).is_none() {
                                out.push(s);
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// Tensor parameters, in signature order.
    pub fn tensor_params(&self) -> impl Iterator<Item = &TensorDecl> {
        self.params.iter().filter_map(|p| match p {
            Param::Tensor(t) => self.tensor(t),
            Param::Scalar { .. } => None,
        })
    }

    /// The type of `e` inside comprehension `c` (or outside any, for `None`).
    ///
    /// Assumes a verified def; unknown names type as `int64`.
    pub fn type_of(&self, c: Option<&Comprehension>, e: &Expr) -> DType {
        match e {
            Expr::Lit(_, t) | Expr::Cast(t, _) => *t,
            Expr::Iter(_) => DType::I64,
            Expr::Sym(s) => self.scalar(s).unwrap_or(DType::I64),
            Expr::Local(n) => {
                // A let's value may only use earlier lets, so its type is
                // computed with the later ones (itself included) out of
                // scope; that also keeps `where t = t` from recursing forever.
                let Some(c) = c else { return DType::I64 };
                let Some(k) = c.lets.iter().position(|(m, _)| m == n) else {
                    return DType::I64;
                };
                let earlier = Comprehension {
                    lets: c.lets[..k].to_vec(),
                    ..c.clone()
                };
                self.type_of(Some(&earlier), &c.lets[k].1)
            }
            Expr::Read(t, _) => self.tensor(t).map(|t| t.dtype).unwrap_or(DType::I64),
            Expr::Unary(crate::UnOp::Not, _) => DType::Bool,
            Expr::Unary(_, a) => self.type_of(c, a),
            Expr::Binary(op, a, _) => {
                if op.is_comparison() || op.is_logical() {
                    DType::Bool
                } else {
                    self.type_of(c, a)
                }
            }
            Expr::Select(_, a, _) => self.type_of(c, a),
            Expr::Call(_, args) => args
                .first()
                .map(|a| self.type_of(c, a))
                .unwrap_or(DType::F32),
        }
    }
}

/// A statement of a def.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    Comp(Comprehension),
    Call(CallStmt),
    /// A structured loop region (the imperative frontend's `for`/`while`).
    Loop(LoopStmt),
    /// A structured two-way branch region.
    If(IfStmt),
}

/// A loop whose results are values: `(r..) = for k in 0:COUNT while COND
/// carry (T p = init, ..) { body; yield (y..) }`.
///
/// Semantics: the carried parameters start as copies of their initial
/// tensors; before each iteration `k` (0, 1, ...) the loop stops if `k`
/// reached `count` or `cond` (evaluated on the current carried values) is
/// false; otherwise the body runs with `index` bound to `k` (an `int64`
/// scalar in the body) and the carried parameters take the yielded values.
/// The results are the carried values when the loop stops. A body writes
/// only tensors it declares itself; the tensors it defines are not visible
/// after the loop. At least one of `count` and `cond` is present.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopStmt {
    pub index: String,
    /// The number of iterations, an `int64` expression over size symbols,
    /// integer scalars and enclosing loops' indices.
    pub count: Option<Expr>,
    /// A `bool` expression over the same names and reads of 0-d tensors
    /// (carried parameters among them), checked before every iteration.
    pub cond: Option<Expr>,
    pub carried: Vec<Carried>,
    pub body: Vec<Stmt>,
    /// The body's next value of each carried parameter, in order.
    pub yields: Vec<String>,
    /// The tensors the loop defines, one per carried parameter.
    pub results: Vec<String>,
}

/// One loop-carried tensor: the body's parameter and its initial value.
#[derive(Clone, Debug, PartialEq)]
pub struct Carried {
    pub param: String,
    pub init: String,
}

/// A branch whose results are values: `(r..) = if COND { ..; yield (a..) }
/// else { ..; yield (b..) }`. Exactly one body runs; the results are the
/// tensors it yields. Each body writes only tensors it declares itself.
#[derive(Clone, Debug, PartialEq)]
pub struct IfStmt {
    /// A `bool` expression over size symbols, integer scalars, enclosing
    /// loops' indices and reads of 0-d tensors.
    pub cond: Expr,
    pub then_body: Vec<Stmt>,
    pub then_yields: Vec<String>,
    pub else_body: Vec<Stmt>,
    pub else_yields: Vec<String>,
    pub results: Vec<String>,
}

impl LoopStmt {
    /// The tensors the loop reads from outside: initial values, and what
    /// its condition and body read that they do not define themselves.
    pub fn free_reads(&self) -> Vec<&str> {
        let mut inner: Vec<&str> = self.carried.iter().map(|c| c.param.as_str()).collect();
        let mut out: Vec<&str> = self.carried.iter().map(|c| c.init.as_str()).collect();
        let cond_reads = self
            .cond
            .iter()
            .flat_map(|e| e.reads().into_iter().map(|(t, _)| t));
        for t in cond_reads.chain(block_free_reads(&self.body, &mut inner)) {
            if !inner.contains(&t) && !out.contains(&t) {
                out.push(t);
            }
        }
        out
    }
}

impl IfStmt {
    /// The tensors the branch reads from outside it.
    pub fn free_reads(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self.cond.reads().into_iter().map(|(t, _)| t).collect();
        for body in [&self.then_body, &self.else_body] {
            for t in block_free_reads(body, &mut Vec::new()) {
                if !out.contains(&t) {
                    out.push(t);
                }
            }
        }
        out
    }
}

/// What the statements of a block read before the block defines it, in
/// order; `defined` starts with the names the block's header binds and
/// collects what the block writes.
fn block_free_reads<'a>(stmts: &'a [Stmt], defined: &mut Vec<&'a str>) -> Vec<&'a str> {
    let mut out = Vec::new();
    for s in stmts {
        for t in s.reads() {
            if !defined.contains(&t) && !out.contains(&t) {
                out.push(t);
            }
        }
        defined.extend(s.written());
    }
    out
}

/// Visits every statement of `stmts` and of the regions inside them,
/// parents before their bodies.
pub fn walk_stmts<'a>(stmts: &'a [Stmt], f: &mut dyn FnMut(&'a Stmt)) {
    for s in stmts {
        f(s);
        match s {
            Stmt::Loop(l) => walk_stmts(&l.body, f),
            Stmt::If(b) => {
                walk_stmts(&b.then_body, f);
                walk_stmts(&b.else_body, f);
            }
            Stmt::Comp(_) | Stmt::Call(_) => {}
        }
    }
}

impl Stmt {
    /// The tensors the statement writes.
    pub fn written(&self) -> Vec<&str> {
        match self {
            Stmt::Comp(c) => vec![c.tensor.as_str()],
            Stmt::Call(call) => call.results.iter().map(String::as_str).collect(),
            Stmt::Loop(l) => l.results.iter().map(String::as_str).collect(),
            Stmt::If(b) => b.results.iter().map(String::as_str).collect(),
        }
    }

    /// The tensors the statement reads: a comprehension's in its body, its
    /// lets and its `exists` clauses; a call's tensor arguments; a region's
    /// free reads (what it reads from outside itself).
    pub fn reads(&self) -> Vec<&str> {
        match self {
            Stmt::Comp(c) => std::iter::once(&c.body)
                .chain(c.lets.iter().map(|(_, e)| e))
                .chain(&c.exists)
                .flat_map(|e| e.reads().into_iter().map(|(t, _)| t))
                .collect(),
            Stmt::Call(call) => call
                .args
                .iter()
                .filter_map(|a| match a {
                    CallArg::Tensor(t) => Some(t.as_str()),
                    CallArg::Scalar(_) => None,
                })
                .collect(),
            Stmt::Loop(l) => l.free_reads(),
            Stmt::If(b) => b.free_reads(),
        }
    }

    /// Whether this is a loop or branch region.
    pub fn is_region(&self) -> bool {
        matches!(self, Stmt::Loop(_) | Stmt::If(_))
    }
}

/// How a comprehension combines values into its output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reduction {
    /// `=`: no reduction iterators allowed; every point is written once.
    Assign,
    Add,
    Mul,
    Min,
    Max,
}

impl Reduction {
    /// The TC operator (`=`, `+=`, `*=`, `min=`, `max=`), without `!`.
    pub fn symbol(self) -> &'static str {
        match self {
            Reduction::Assign => "=",
            Reduction::Add => "+=",
            Reduction::Mul => "*=",
            Reduction::Min => "min=",
            Reduction::Max => "max=",
        }
    }

    /// The identity of the reduction in type `t` (for `op=!`).
    pub fn identity(self, t: DType) -> Value {
        match (self, t.is_float()) {
            (Reduction::Assign | Reduction::Add, true) => Value::Float(0.0),
            (Reduction::Assign | Reduction::Add, false) => Value::Int(0),
            (Reduction::Mul, true) => Value::Float(1.0),
            (Reduction::Mul, false) => Value::Int(1),
            (Reduction::Min, true) => Value::Float(f64::INFINITY),
            (Reduction::Max, true) => Value::Float(f64::NEG_INFINITY),
            (Reduction::Min, false) => Value::Int(int_max(t)),
            (Reduction::Max, false) => Value::Int(int_min(t)),
        }
    }
}

/// The largest value of integer type `t` (as stored in an `i64`; `uint64`'s
/// maximum is the bit pattern `-1`).
pub fn int_max(t: DType) -> i64 {
    match t {
        DType::Bool => 1,
        DType::U2 => 3,
        DType::I2 => 1,
        DType::U4 => 15,
        DType::I4 => 7,
        DType::U8 => u8::MAX as i64,
        DType::I8 => i8::MAX as i64,
        DType::U16 => u16::MAX as i64,
        DType::I16 => i16::MAX as i64,
        DType::U32 => u32::MAX as i64,
        DType::I32 => i32::MAX as i64,
        DType::U64 => -1,
        _ => i64::MAX,
    }
}

/// The smallest value of integer type `t`.
pub fn int_min(t: DType) -> i64 {
    match t {
        DType::I2 => -2,
        DType::I4 => -8,
        DType::I8 => i8::MIN as i64,
        DType::I16 => i16::MIN as i64,
        DType::I32 => i32::MIN as i64,
        DType::I64 => i64::MIN,
        _ => 0,
    }
}

/// The half-open range `lo:hi` of one iterator.
#[derive(Clone, Debug, PartialEq)]
pub struct IterRange {
    pub name: String,
    pub lo: SizeExpr,
    pub hi: SizeExpr,
}

/// One tensor comprehension: `T(i, j) op body where ...`.
///
/// Semantics (DESIGN.md 1-3): the body is evaluated at every point of the
/// iteration box given by `ranges`. The right side is read in full before
/// anything is written. For a reduction, a point where a read that is not
/// under a `?:` branch falls outside its tensor contributes nothing; for `=`
/// such a read is an error. With `init`, each output point in the box starts
/// at the reduction's identity; without it, the reduction accumulates onto
/// the tensor's current values. A tensor's first definition starts from
/// zeros, so elements outside the box are zero. A read whose subscripts
/// contain another read (an indirect subscript) is never skipped: out of
/// bounds, it is an error in every statement.
#[derive(Clone, Debug, PartialEq)]
pub struct Comprehension {
    pub tensor: String,
    /// The left-hand-side iterators, one per dimension of `tensor`.
    pub indices: Vec<String>,
    pub op: Reduction,
    /// `op=!`: start from the identity instead of the current values.
    pub init: bool,
    pub body: Expr,
    /// Every iterator's range: the left-hand-side ones first, in order, then
    /// the reduction iterators in order of first appearance.
    pub ranges: Vec<IterRange>,
    /// `where x = e` bindings, in order; later ones may use earlier ones.
    pub lets: Vec<(String, Expr)>,
    /// `where exists e` clauses: used by range inference only.
    pub exists: Vec<Expr>,
}

impl Comprehension {
    /// `tensor(indices) = body where ranges`: a plain assignment.
    pub fn assign(
        tensor: &str,
        indices: Vec<String>,
        body: Expr,
        ranges: Vec<IterRange>,
    ) -> Comprehension {
        Comprehension {
            tensor: tensor.to_string(),
            indices,
            op: Reduction::Assign,
            init: false,
            body,
            ranges,
            lets: Vec::new(),
            exists: Vec::new(),
        }
    }

    pub fn range(&self, name: &str) -> Option<&IterRange> {
        self.ranges.iter().find(|r| r.name == name)
    }

    /// The iterators that do not appear on the left.
    pub fn reduction_iters(&self) -> impl Iterator<Item = &IterRange> {
        self.ranges
            .iter()
            .filter(|r| !self.indices.contains(&r.name))
    }

    /// Renames the tensors read by its body, lets and `exists` clauses:
    /// each to the name `to` gives it, or kept when it gives none.
    pub fn rename_reads(&mut self, to: &dyn Fn(&str) -> Option<String>) {
        let mut map = |e: Expr| match e {
            Expr::Read(t, ix) => Expr::Read(to(&t).unwrap_or(t), ix),
            e => e,
        };
        let body = std::mem::replace(&mut self.body, Expr::int(0));
        self.body = body.map(&mut map);
        for (_, e) in &mut self.lets {
            let old = std::mem::replace(e, Expr::int(0));
            *e = old.map(&mut map);
        }
        for e in &mut self.exists {
            let old = std::mem::replace(e, Expr::int(0));
            *e = old.map(&mut map);
        }
    }
}

/// A call of another def: `(A, B) = f(X, 3, Y)`.
#[derive(Clone, Debug, PartialEq)]
pub struct CallStmt {
    pub callee: String,
    pub args: Vec<CallArg>,
    pub results: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum CallArg {
    Tensor(String),
    /// A scalar expression over literals, scalars and size symbols.
    Scalar(Expr),
}
