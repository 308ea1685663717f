//! Compiling a def with loop and branch regions: every straight-line run
//! of statements (of the def, or of a region's body) becomes a def of its
//! own — a *segment* — compiled for the bound sizes like any def, and the
//! regions run around the compiled segments, as the interpreter runs them
//! (`interp::run`'s region semantics).
//!
//! Requires a verified program and sizes binding the def's size symbols.
//! A segment's parameters are the tensors it reads from before it, the
//! def's scalars and the enclosing loops' indices it mentions (run-time
//! `int64` scalars); its outputs are the tensors it writes that anything
//! after it reads. Guarantees results equal to the interpreter's; a form
//! this cannot compile (a loop index in a shape or range, a tensor both
//! read from before a segment and written in it) is
//! [`Error::NotLowered`], so the caller runs the interpreter instead.
//! Conditions and loop counts are evaluated by the interpreter on a
//! one-statement def (0-d reads and scalars only: microseconds).

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, PoisonError};

use interp::{Arg, Tensor};
use ir::{
    walk_stmts, Comprehension, DType, Def, Expr, IfStmt, IterRange, LoopStmt, Param, Program,
    Reduction, Stmt, TensorDecl, TensorRole, Value,
};
use runtime::State;

use crate::bind::Sizes;
use crate::compile::{self, Compiled, Options};
use crate::Error;

/// A def compiled stage by stage.
#[derive(Debug)]
pub struct Staged {
    def: Def,
    stages: Vec<Stage>,
    sizes: Sizes,
}

#[derive(Debug)]
enum Stage {
    Segment {
        compiled: Box<Compiled>,
        /// Parameter names, and whether each is a scalar.
        params: Vec<(String, bool)>,
        /// Memory of earlier runs, kept for later ones: a fresh state
        /// zeroes every slot, and the page faults of fresh memory were a
        /// quarter of a run of large stages. A run takes one (or makes one)
        /// and returns it, so concurrent runs each have their own.
        states: Mutex<Vec<State>>,
    },
    Loop {
        region: LoopStmt,
        count: Option<Scalar>,
        cond: Option<Scalar>,
        body: Vec<Stage>,
    },
    If {
        region: IfStmt,
        cond: Scalar,
        then_body: Vec<Stage>,
        else_body: Vec<Stage>,
    },
}

/// A region's scalar expression as a one-statement def the interpreter
/// runs: its tensor parameters (0-d reads) and scalar ones.
#[derive(Debug)]
struct Scalar {
    program: Program,
    tensors: Vec<String>,
    scalars: Vec<String>,
}

/// Compiles `def` of `program` stage by stage for `sizes`.
pub fn compile(
    program: &Program,
    def: &Def,
    sizes: &Sizes,
    options: &Options,
) -> Result<Staged, Error> {
    let mut b = Builder {
        program,
        def,
        sizes,
        options,
        segments: 0,
    };
    let live: HashSet<String> = def.outputs.iter().cloned().collect();
    let stages = b.block(&def.stmts, &live, &[])?;
    Ok(Staged {
        def: def.clone(),
        stages,
        sizes: sizes.clone(),
    })
}

struct Builder<'a> {
    program: &'a Program,
    def: &'a Def,
    sizes: &'a Sizes,
    options: &'a Options,
    segments: usize,
}

impl Builder<'_> {
    /// The stages of one block; `live` is what is read after it,
    /// `indices` the enclosing loops' indices.
    fn block(
        &mut self,
        stmts: &[Stmt],
        live: &HashSet<String>,
        indices: &[String],
    ) -> Result<Vec<Stage>, Error> {
        let mut stages = Vec::new();
        let mut start = 0;
        for (k, s) in stmts.iter().enumerate() {
            if !s.is_region() {
                continue;
            }
            let after = live_after(&stmts[k..], live);
            self.segment(&stmts[start..k], &after, indices, &mut stages)?;
            stages.push(self.region(s, indices)?);
            start = k + 1;
        }
        self.segment(&stmts[start..], live, indices, &mut stages)?;
        Ok(stages)
    }

    fn region(&mut self, s: &Stmt, indices: &[String]) -> Result<Stage, Error> {
        match s {
            Stmt::Loop(l) => {
                let mut inner: Vec<String> = indices.to_vec();
                inner.push(l.index.clone());
                let mut live: HashSet<String> = l.yields.iter().cloned().collect();
                if let Some(c) = &l.cond {
                    live.extend(c.reads().into_iter().map(|(t, _)| t.to_string()));
                }
                let body = self.block(&l.body, &live, &inner)?;
                Ok(Stage::Loop {
                    count: l
                        .count
                        .as_ref()
                        .map(|e| self.scalar(e, DType::I64, indices))
                        .transpose()?,
                    cond: l
                        .cond
                        .as_ref()
                        .map(|e| self.scalar(e, DType::Bool, &inner))
                        .transpose()?,
                    region: LoopStmt {
                        body: Vec::new(),
                        ..l.clone()
                    },
                    body,
                })
            }
            Stmt::If(b) => {
                let then_live: HashSet<String> = b.then_yields.iter().cloned().collect();
                let else_live: HashSet<String> = b.else_yields.iter().cloned().collect();
                Ok(Stage::If {
                    cond: self.scalar(&b.cond, DType::Bool, indices)?,
                    then_body: self.block(&b.then_body, &then_live, indices)?,
                    else_body: self.block(&b.else_body, &else_live, indices)?,
                    region: IfStmt {
                        then_body: Vec::new(),
                        else_body: Vec::new(),
                        ..b.clone()
                    },
                })
            }
            _ => unreachable!("only regions are passed here"),
        }
    }

    /// Compiles the straight-line `stmts` as a segment, if they write
    /// anything `live` needs.
    fn segment(
        &mut self,
        stmts: &[Stmt],
        live: &HashSet<String>,
        indices: &[String],
        out: &mut Vec<Stage>,
    ) -> Result<(), Error> {
        if stmts.is_empty() {
            return Ok(());
        }
        let not_lowered = |reason: String| Error::NotLowered {
            def: self.def.name.clone(),
            reason,
        };
        let mut written: Vec<String> = Vec::new();
        let mut reads: Vec<String> = Vec::new();
        for s in stmts {
            for r in s.reads() {
                if !written.iter().any(|w| w == r) && !reads.iter().any(|x| x == r) {
                    reads.push(r.to_string());
                }
            }
            if let Stmt::Comp(c) = s {
                if c.op != Reduction::Assign && !c.init && !written.contains(&c.tensor) {
                    reads.push(c.tensor.clone());
                }
            }
            for w in s.written() {
                if !written.iter().any(|x| x == w) {
                    written.push(w.to_string());
                }
            }
        }
        if let Some(t) = reads.iter().find(|r| written.contains(r)) {
            return Err(not_lowered(format!(
                "`{t}` is read before a compiled stage and written in it"
            )));
        }
        let outputs: Vec<String> = written
            .iter()
            .filter(|w| live.contains(*w))
            .cloned()
            .collect();
        if outputs.is_empty() {
            return Ok(());
        }
        let mut symbols: Vec<String> = Vec::new();
        walk_stmts(stmts, &mut |s| {
            for e in stmt_exprs(s) {
                e.walk(&mut |x| {
                    if let Expr::Sym(n) = x {
                        if !symbols.contains(n) {
                            symbols.push(n.clone());
                        }
                    }
                });
            }
        });
        let mut params = Vec::new();
        let mut tensors = Vec::new();
        for r in &reads {
            let decl = self.decl(r)?;
            tensors.push(TensorDecl {
                role: TensorRole::Input,
                ..decl
            });
            params.push(Param::Tensor(r.clone()));
        }
        for s in &symbols {
            if let Some(dtype) = self.def.scalar(s) {
                params.push(Param::Scalar {
                    name: s.clone(),
                    dtype,
                });
            } else if indices.contains(s) {
                params.push(Param::Scalar {
                    name: s.clone(),
                    dtype: DType::I64,
                });
            }
        }
        for w in &written {
            let decl = self.decl(w)?;
            let role = if outputs.contains(w) {
                TensorRole::Output
            } else {
                TensorRole::Temp
            };
            tensors.push(TensorDecl { role, ..decl });
        }
        for t in &tensors {
            if let Some(s) = t
                .shape
                .iter()
                .flat_map(|d| d.symbols())
                .find(|s| indices.contains(s))
            {
                return Err(not_lowered(format!(
                    "the shape of `{}` depends on the loop index `{s}`",
                    t.name
                )));
            }
        }
        self.segments += 1;
        let seg = Def {
            name: format!("{}__stage{}", self.def.name, self.segments),
            params: params.clone(),
            outputs,
            tensors,
            stmts: stmts.to_vec(),
        };
        let mut program = self.program.clone();
        program.defs.push(seg.clone());
        // A stage's outputs are the next stages' arguments: kept in order.
        let options = Options {
            output_layouts: false,
            ..self.options.clone()
        };
        let compiled = compile::compile(&program, &seg, self.sizes, &options)?;
        out.push(Stage::Segment {
            compiled: Box::new(compiled),
            params: params
                .iter()
                .map(|p| (p.name().to_string(), matches!(p, Param::Scalar { .. })))
                .collect(),
            states: Mutex::new(Vec::new()),
        });
        Ok(())
    }

    fn decl(&self, t: &str) -> Result<TensorDecl, Error> {
        self.def.tensor(t).cloned().ok_or_else(|| {
            Error::Internal(format!(
                "internal error: `{t}` has no declaration in `{}`",
                self.def.name
            ))
        })
    }

    /// A condition or count as a one-statement def: its 0-d reads become
    /// parameters, its size symbols their values.
    fn scalar(&self, e: &Expr, dtype: DType, indices: &[String]) -> Result<Scalar, Error> {
        let e = e.clone().map(&mut |x| match x {
            Expr::Sym(s) if self.def.scalar(&s).is_none() && !indices.contains(&s) => {
                match self.sizes.get(&s) {
                    Some(&v) => Expr::Lit(Value::Int(v), DType::I64),
                    None => Expr::Sym(s),
                }
            }
            x => x,
        });
        let mut tensors = Vec::new();
        let mut scalars = Vec::new();
        e.walk(&mut |x| match x {
            Expr::Read(t, _) if !tensors.contains(t) => tensors.push(t.clone()),
            Expr::Sym(s) if !scalars.contains(s) => scalars.push(s.clone()),
            _ => {}
        });
        let mut decls = Vec::new();
        let mut params = Vec::new();
        for t in &tensors {
            let d = self.decl(t)?;
            params.push(Param::Tensor(t.clone()));
            decls.push(TensorDecl {
                role: TensorRole::Input,
                ..d
            });
        }
        for s in &scalars {
            params.push(Param::Scalar {
                name: s.clone(),
                dtype: self.def.scalar(s).unwrap_or(DType::I64),
            });
        }
        let out = "__value".to_string();
        decls.push(TensorDecl {
            name: out.clone(),
            dtype,
            shape: Vec::new(),
            role: TensorRole::Output,
        });
        let def = Def {
            name: "__scalar".to_string(),
            params,
            outputs: vec![out.clone()],
            tensors: decls,
            stmts: vec![Stmt::Comp(Comprehension {
                tensor: out,
                indices: Vec::new(),
                op: Reduction::Assign,
                init: false,
                body: e,
                ranges: Vec::<IterRange>::new(),
                lets: Vec::new(),
                exists: Vec::new(),
            })],
        };
        Ok(Scalar {
            program: Program { defs: vec![def] },
            tensors,
            scalars,
        })
    }
}

/// What the statements `rest` read, with `live` (what is read after them).
fn live_after(rest: &[Stmt], live: &HashSet<String>) -> HashSet<String> {
    let mut out = live.clone();
    for s in rest {
        out.extend(s.reads().into_iter().map(str::to_string));
        // A region's yields may name tensors from before it.
        if let Stmt::Loop(l) = s {
            out.extend(l.yields.iter().cloned());
        }
        if let Stmt::If(b) = s {
            out.extend(b.then_yields.iter().chain(&b.else_yields).cloned());
        }
    }
    out
}

/// The expressions of a statement (not of its regions' bodies).
fn stmt_exprs(s: &Stmt) -> Vec<Expr> {
    match s {
        Stmt::Comp(c) => {
            let mut v = vec![c.body.clone()];
            v.extend(c.lets.iter().map(|(_, e)| e.clone()));
            v.extend(c.exists.iter().cloned());
            for r in &c.ranges {
                v.push(r.lo.to_expr());
                v.push(r.hi.to_expr());
            }
            v
        }
        Stmt::Call(call) => call
            .args
            .iter()
            .filter_map(|a| match a {
                ir::CallArg::Scalar(e) => Some(e.clone()),
                ir::CallArg::Tensor(_) => None,
            })
            .collect(),
        Stmt::Loop(l) => l.count.iter().chain(&l.cond).cloned().collect(),
        Stmt::If(b) => vec![b.cond.clone()],
    }
}

/// What a run knows: the tensors defined so far and the scalars (the def's
/// and the loop indices).
struct Env {
    tensors: HashMap<String, Tensor>,
    scalars: HashMap<String, Value>,
    /// The compiled steps run so far.
    steps: usize,
}

impl Staged {
    /// Runs the stages on `args` (every parameter of the def).
    pub fn run(&self, args: &HashMap<String, Arg>) -> Result<Vec<(String, Tensor)>, Error> {
        self.run_counting(args).map(|(outputs, _)| outputs)
    }

    /// [`Staged::run`], also giving how many compiled steps (kernels and
    /// library calls) the run executed: the stages' steps times how often
    /// each ran.
    pub fn run_counting(
        &self,
        args: &HashMap<String, Arg>,
    ) -> Result<(Vec<(String, Tensor)>, usize), Error> {
        let mut env = Env {
            tensors: HashMap::new(),
            scalars: HashMap::new(),
            steps: 0,
        };
        for (k, a) in args {
            match a {
                Arg::Tensor(t) => {
                    env.tensors.insert(k.clone(), t.clone());
                }
                Arg::Scalar(v) => {
                    env.scalars.insert(k.clone(), *v);
                }
            }
        }
        self.stages(&self.stages, &mut env)?;
        let outputs = self
            .def
            .outputs
            .iter()
            .map(|o| {
                env.tensors
                    .get(o)
                    .map(|t| (o.clone(), t.clone()))
                    .ok_or_else(|| {
                        Error::Internal(format!("internal error: output `{o}` was not computed"))
                    })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok((outputs, env.steps))
    }

    fn stages(&self, stages: &[Stage], env: &mut Env) -> Result<(), Error> {
        for s in stages {
            match s {
                Stage::Segment {
                    compiled,
                    params,
                    states,
                } => {
                    let mut args = HashMap::new();
                    for (p, scalar) in params {
                        let a = if *scalar {
                            Arg::Scalar(*env.scalars.get(p).ok_or_else(|| missing(p))?)
                        } else {
                            Arg::Tensor(env.tensors.get(p).ok_or_else(|| missing(p))?.clone())
                        };
                        args.insert(p.clone(), a);
                    }
                    let kept = states.lock().unwrap_or_else(PoisonError::into_inner).pop();
                    let mut state = match kept {
                        Some(mut state) => {
                            compiled.bind(&mut state, &args)?;
                            state
                        }
                        None => compiled.prepare(&args)?,
                    };
                    compiled
                        .run_state(&mut state, None)
                        .map_err(Error::Compiled)?;
                    env.steps += compiled.steps();
                    for (name, t) in compiled.outputs(&state)? {
                        env.tensors.insert(name, t);
                    }
                    // The kept state must not keep the arguments alive.
                    compiled.unbind(&mut state, &args)?;
                    states
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(state);
                }
                Stage::Loop {
                    region,
                    count,
                    cond,
                    body,
                } => self.run_loop(region, count.as_ref(), cond.as_ref(), body, env)?,
                Stage::If {
                    region,
                    cond,
                    then_body,
                    else_body,
                } => {
                    let taken = matches!(self.eval(cond, env)?, Value::Bool(true));
                    let (body, yields) = if taken {
                        (then_body, &region.then_yields)
                    } else {
                        (else_body, &region.else_yields)
                    };
                    let mut inner = Env {
                        tensors: env.tensors.clone(),
                        scalars: env.scalars.clone(),
                        steps: 0,
                    };
                    self.stages(body, &mut inner)?;
                    env.steps += inner.steps;
                    for (r, y) in region.results.iter().zip(yields) {
                        let t = inner.tensors.get(y).ok_or_else(|| missing(y))?.clone();
                        env.tensors.insert(r.clone(), t);
                    }
                }
            }
        }
        Ok(())
    }

    fn run_loop(
        &self,
        l: &LoopStmt,
        count: Option<&Scalar>,
        cond: Option<&Scalar>,
        body: &[Stage],
        env: &mut Env,
    ) -> Result<(), Error> {
        let mut carried: Vec<Tensor> = l
            .carried
            .iter()
            .map(|c| {
                env.tensors
                    .get(&c.init)
                    .cloned()
                    .ok_or_else(|| missing(&c.init))
            })
            .collect::<Result<_, _>>()?;
        let count = match count {
            Some(c) => match self.eval(c, env)? {
                Value::Int(n) => Some(n),
                other => {
                    return Err(Error::Internal(format!(
                        "internal error: a loop count of {other:?}"
                    )))
                }
            },
            None => None,
        };
        let mut k = 0i64;
        loop {
            if count.is_some_and(|n| k >= n) {
                break;
            }
            let mut inner = Env {
                tensors: env.tensors.clone(),
                scalars: env.scalars.clone(),
                steps: 0,
            };
            for (c, t) in l.carried.iter().zip(&carried) {
                inner.tensors.insert(c.param.clone(), t.clone());
            }
            inner.scalars.insert(l.index.clone(), Value::Int(k));
            if let Some(c) = cond {
                if !matches!(self.eval(c, &inner)?, Value::Bool(true)) {
                    break;
                }
            }
            self.stages(body, &mut inner)?;
            env.steps += inner.steps;
            carried = l
                .yields
                .iter()
                .map(|y| inner.tensors.get(y).cloned().ok_or_else(|| missing(y)))
                .collect::<Result<_, _>>()?;
            k += 1;
        }
        for (r, t) in l.results.iter().zip(carried) {
            env.tensors.insert(r.clone(), t);
        }
        Ok(())
    }

    /// A condition's or count's value, on the interpreter.
    fn eval(&self, s: &Scalar, env: &Env) -> Result<Value, Error> {
        let mut args = HashMap::new();
        for t in &s.tensors {
            args.insert(
                t.clone(),
                Arg::Tensor(env.tensors.get(t).ok_or_else(|| missing(t))?.clone()),
            );
        }
        for n in &s.scalars {
            args.insert(
                n.clone(),
                Arg::Scalar(*env.scalars.get(n).ok_or_else(|| missing(n))?),
            );
        }
        let out = interp::run(
            &s.program,
            "__scalar",
            &args,
            &self.sizes,
            interp::Mode::Real,
        )
        .map_err(|e| Error::Compiled(format!("a region's condition: {e}")))?;
        let (_, t) = out.into_iter().next().ok_or_else(|| missing("__value"))?;
        t.values()
            .into_iter()
            .next()
            .ok_or_else(|| missing("__value"))
    }
}

fn missing(name: &str) -> Error {
    Error::Internal(format!(
        "internal error: `{name}` is not computed when a stage needs it"
    ))
}

/// A def compiled whole, or stage by stage when it has regions: what a
/// caller that runs a def many times keeps.
#[derive(Debug)]
pub enum Runnable {
    Whole(Box<Compiled>),
    Staged(Staged),
}

impl Runnable {
    /// Compiles `def` of `program` for `sizes`.
    pub fn compile(
        program: &Program,
        def: &Def,
        sizes: &Sizes,
        options: &Options,
    ) -> Result<Runnable, Error> {
        if def.has_regions() {
            compile(program, def, sizes, options).map(Runnable::Staged)
        } else {
            compile::compile(program, def, sizes, options).map(|c| Runnable::Whole(Box::new(c)))
        }
    }

    /// Runs on `args` (every parameter of the def); the outputs in order.
    pub fn run(&self, args: &HashMap<String, Arg>) -> Result<Vec<(String, Tensor)>, Error> {
        match self {
            Runnable::Whole(c) => {
                let mut state = c.prepare(args)?;
                c.run_state(&mut state, None).map_err(Error::Compiled)?;
                c.outputs(&state)
            }
            Runnable::Staged(s) => s.run(args),
        }
    }
}
