//! Builders for hand-written IR in the interpreter's tests.
//!
//! The TC front end is not available to these tests, so programs are built
//! directly. Every program is run through `ir::verify_program` first, so a
//! test can only exercise IR the rest of tessera could produce.

#![allow(dead_code)] // Each test binary uses a different subset.

use std::collections::HashMap;

use interp::{Arg, Mode, RunError, Tensor};
use ir::{
    BinOp, Builtin, Comprehension, DType, Def, Expr, IterRange, Param, Program, Reduction,
    SizeExpr, Stmt, TensorDecl, TensorRole, UnOp, Value,
};

/// A dimension: a number is a constant, anything else a size symbol.
pub fn dim(d: &str) -> SizeExpr {
    d.parse::<i64>()
        .map_or_else(|_| SizeExpr::sym(d), SizeExpr::constant)
}

pub fn dims(ds: &[&str]) -> Vec<SizeExpr> {
    ds.iter().map(|d| dim(d)).collect()
}

pub fn it(n: &str) -> Expr {
    Expr::Iter(n.to_string())
}

pub fn sym(n: &str) -> Expr {
    Expr::Sym(n.to_string())
}

pub fn local(n: &str) -> Expr {
    Expr::Local(n.to_string())
}

pub fn read(t: &str, subs: Vec<Expr>) -> Expr {
    Expr::Read(t.to_string(), subs)
}

/// A read whose subscripts are iterators.
pub fn at(t: &str, iters: &[&str]) -> Expr {
    read(t, iters.iter().map(|i| it(i)).collect())
}

pub fn lit_i(v: i64, t: DType) -> Expr {
    Expr::Lit(Value::Int(v), t)
}

pub fn lit_f(x: f64, t: DType) -> Expr {
    Expr::Lit(Value::Float(x), t)
}

pub fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr::binary(op, a, b)
}

pub fn add(a: Expr, b: Expr) -> Expr {
    bin(BinOp::Add, a, b)
}

pub fn sub(a: Expr, b: Expr) -> Expr {
    bin(BinOp::Sub, a, b)
}

pub fn mul(a: Expr, b: Expr) -> Expr {
    bin(BinOp::Mul, a, b)
}

pub fn neg(a: Expr) -> Expr {
    Expr::Unary(UnOp::Neg, Box::new(a))
}

pub fn select(c: Expr, a: Expr, b: Expr) -> Expr {
    Expr::Select(Box::new(c), Box::new(a), Box::new(b))
}

pub fn call(f: Builtin, args: Vec<Expr>) -> Expr {
    Expr::Call(f, args)
}

pub fn cast(t: DType, a: Expr) -> Expr {
    Expr::Cast(t, Box::new(a))
}

pub fn range(n: &str, lo: SizeExpr, hi: SizeExpr) -> IterRange {
    IterRange {
        name: n.to_string(),
        lo,
        hi,
    }
}

/// `n in 0:hi`.
pub fn upto(n: &str, hi: &str) -> IterRange {
    range(n, SizeExpr::zero(), dim(hi))
}

/// A comprehension without lets or `exists`.
pub fn comp(
    tensor: &str,
    indices: &[&str],
    op: Reduction,
    init: bool,
    body: Expr,
    ranges: Vec<IterRange>,
) -> Comprehension {
    Comprehension {
        tensor: tensor.to_string(),
        indices: indices.iter().map(|s| s.to_string()).collect(),
        op,
        init,
        body,
        ranges,
        lets: Vec::new(),
        exists: Vec::new(),
    }
}

/// Builds a def parameter by parameter and statement by statement.
pub struct DefBuilder {
    def: Def,
}

impl DefBuilder {
    pub fn new(name: &str) -> DefBuilder {
        DefBuilder {
            def: Def {
                name: name.to_string(),
                params: vec![],
                outputs: vec![],
                tensors: vec![],
                stmts: vec![],
            },
        }
    }

    fn decl(
        mut self,
        name: &str,
        dtype: DType,
        shape: Vec<SizeExpr>,
        role: TensorRole,
    ) -> DefBuilder {
        self.def.tensors.push(TensorDecl {
            name: name.to_string(),
            dtype,
            shape,
            role,
        });
        self
    }

    pub fn input(mut self, name: &str, dtype: DType, shape: &[&str]) -> DefBuilder {
        self.def.params.push(Param::Tensor(name.to_string()));
        self.decl(name, dtype, dims(shape), TensorRole::Input)
    }

    /// A parameter that is also returned.
    pub fn inout(mut self, name: &str, dtype: DType, shape: &[&str]) -> DefBuilder {
        self.def.params.push(Param::Tensor(name.to_string()));
        self.def.outputs.push(name.to_string());
        self.decl(name, dtype, dims(shape), TensorRole::InOut)
    }

    pub fn scalar(mut self, name: &str, dtype: DType) -> DefBuilder {
        self.def.params.push(Param::Scalar {
            name: name.to_string(),
            dtype,
        });
        self
    }

    pub fn output(self, name: &str, dtype: DType, shape: &[&str]) -> DefBuilder {
        self.output_shaped(name, dtype, dims(shape))
    }

    pub fn output_shaped(mut self, name: &str, dtype: DType, shape: Vec<SizeExpr>) -> DefBuilder {
        self.def.outputs.push(name.to_string());
        self.decl(name, dtype, shape, TensorRole::Output)
    }

    pub fn temp(self, name: &str, dtype: DType, shape: &[&str]) -> DefBuilder {
        self.decl(name, dtype, dims(shape), TensorRole::Temp)
    }

    pub fn comp(mut self, c: Comprehension) -> DefBuilder {
        self.def.stmts.push(Stmt::Comp(c));
        self
    }

    pub fn stmt(mut self, s: Stmt) -> DefBuilder {
        self.def.stmts.push(s);
        self
    }

    pub fn build(self) -> Def {
        self.def
    }
}

/// A verified program of the given defs.
pub fn program(defs: Vec<Def>) -> Program {
    let p = Program { defs };
    if let Err(errs) = ir::verify_program(&p) {
        panic!(
            "test program does not verify: {errs:#?}\n{}",
            ir::print_program(&p)
        );
    }
    p
}

pub fn tensor_args(ts: &[(&str, &Tensor)]) -> HashMap<String, Arg> {
    ts.iter()
        .map(|(n, t)| (n.to_string(), Arg::Tensor((*t).clone())))
        .collect()
}

/// Runs the only def of `p` in real mode with no given sizes.
pub fn run_real(
    p: &Program,
    args: &HashMap<String, Arg>,
) -> Result<Vec<(String, Tensor)>, RunError> {
    interp::run(
        p,
        &p.defs[p.defs.len() - 1].name,
        args,
        &HashMap::new(),
        Mode::Real,
    )
}

/// The single output of a successful run.
pub fn only_output(r: Result<Vec<(String, Tensor)>, RunError>) -> Tensor {
    let mut outs = r.unwrap_or_else(|e| panic!("run failed: {e} ({:?})", e.stmt));
    assert_eq!(outs.len(), 1);
    outs.remove(0).1
}

/// The message of a failed run, with its statement index.
pub fn failure(r: Result<Vec<(String, Tensor)>, RunError>) -> (Option<usize>, String) {
    match r {
        Ok(outs) => panic!("run succeeded unexpectedly: {outs:?}"),
        Err(e) => (e.stmt, e.message),
    }
}
