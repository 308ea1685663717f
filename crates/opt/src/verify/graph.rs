//! A def, for concrete sizes, as a graph of tensor versions: what the
//! verifier evaluates lazily and propagates boxes over.
//!
//! Every statement that writes a tensor makes a new version of it (a
//! [`Node`]) whose compiled statement reads the versions current before it
//! (the interpreter's functional update: the right side is read in full
//! before anything is written). A tensor's first definition starts from a
//! node of zeros; inputs are nodes naming their parameter's position, so two
//! defs with the same signature read the same random values. Calls are
//! inlined: the callee's statements become nodes of the same graph, its
//! parameters bound to the caller's versions and its sizes bound from their
//! shapes.
//!
//! Requires: a program that passes `ir::verify_program`. Guarantees: nodes
//! are in topological order (a statement reads only earlier nodes); never
//! panics.

use std::collections::HashMap;

use ir::{CallArg, Def, Param, Program, Stmt};

use super::compile::{compile_comp, Scope};
use super::expr::{Comp, Val};

/// A tensor version.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub shape: Vec<usize>,
    /// Row-major strides.
    pub strides: Vec<usize>,
    pub kind: NodeKind,
    /// An upper bound on the degree of its elements as polynomials in the
    /// inputs (Schwartz–Zippel's `d`).
    pub degree: u32,
}

#[derive(Clone, Debug)]
pub(crate) enum NodeKind {
    /// The top-level def's parameter at this position.
    Input(usize),
    Zeros,
    /// A statement and the version it updates.
    Comp {
        comp: Box<Comp>,
        prev: usize,
    },
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Graph {
    pub nodes: Vec<Node>,
    /// The top-level def's outputs, in order.
    pub outputs: Vec<usize>,
    /// Whether statements that are no polynomial were compiled too (for
    /// the floating-point test at sampled points).
    pub real: bool,
}

/// Calls may nest this deep (the IR verifier already refuses recursion).
const MAX_CALL_DEPTH: usize = 64;

/// The graph of `def` with its size symbols and integer scalars bound to
/// `sizes`; float scalar parameters become random values like inputs.
/// With `real`, statements that are no polynomial compile too.
pub(crate) fn build(
    program: &Program,
    def: &Def,
    sizes: &HashMap<String, i64>,
    real: bool,
) -> Result<Graph, String> {
    let mut g = Graph {
        real,
        ..Graph::default()
    };
    let mut env = HashMap::new();
    let mut scalars = HashMap::new();
    for (k, p) in def.params.iter().enumerate() {
        match p {
            Param::Tensor(t) => {
                let shape = shape(def, t, sizes)?;
                env.insert(t.clone(), g.push(shape, NodeKind::Input(k), 1));
            }
            Param::Scalar { name, dtype } if dtype.is_float() => {
                scalars.insert(name.clone(), Val::Scalar(k));
            }
            Param::Scalar { .. } => {}
        }
    }
    g.outputs = g.body(program, def, sizes, &scalars, env, 0)?;
    Ok(g)
}

/// The concrete shape of tensor `t` of `def`.
pub(crate) fn shape(
    def: &Def,
    t: &str,
    sizes: &HashMap<String, i64>,
) -> Result<Vec<usize>, String> {
    interp::param_shape(def, t, sizes).map_err(|e| e.message)
}

/// Binds the size symbols and integer scalars of `def` from the shapes its
/// tensor parameters have (`shapes`, in parameter order) and `given`; every
/// declared parameter shape must then be the shape given for it.
pub(crate) fn bind_from_shapes(
    def: &Def,
    shapes: &[Vec<usize>],
    mut given: HashMap<String, i64>,
) -> Result<HashMap<String, i64>, String> {
    let params: Vec<&ir::TensorDecl> = def.tensor_params().collect();
    for (decl, shape) in params.iter().zip(shapes) {
        if decl.shape.len() != shape.len() {
            return Err(format!(
                "`{}` of `{}` has rank {}, but a tensor of shape {} is passed for it",
                decl.name,
                def.name,
                decl.shape.len(),
                show(shape)
            ));
        }
        for (dim, &n) in decl.shape.iter().zip(shape) {
            if let Some(s) = dim.as_sym() {
                given.entry(s.to_string()).or_insert(n as i64);
            }
        }
    }
    let sizes = interp::bind_sizes(def, &HashMap::new(), &given).map_err(|e| e.message)?;
    if let Some(s) = def
        .size_symbols()
        .into_iter()
        .find(|s| !sizes.contains_key(s))
    {
        return Err(format!(
            "size symbol `{s}` of `{}` has no value: bind it with `--size {s}=<n>`",
            def.name
        ));
    }
    for (decl, want) in params.iter().zip(shapes) {
        let have = shape(def, &decl.name, &sizes)?;
        if &have != want {
            return Err(format!(
                "`{}` of `{}` is {} with these sizes, but the tensor passed for it is {}",
                decl.name,
                def.name,
                show(&have),
                show(want)
            ));
        }
    }
    Ok(sizes)
}

/// A shape as `[2, 3]`.
pub(crate) fn show(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(ToString::to_string).collect();
    format!("[{}]", parts.join(", "))
}

impl Graph {
    /// The points of every statement's iteration space: what interpreting
    /// the graph whole evaluates.
    pub(crate) fn work(&self) -> u64 {
        self.nodes
            .iter()
            .filter_map(|n| match &n.kind {
                NodeKind::Comp { comp, .. } => Some(
                    comp.bounds
                        .iter()
                        .fold(1u64, |w, &(lo, hi)| w.saturating_mul((hi - lo) as u64)),
                ),
                _ => None,
            })
            .fold(0, u64::saturating_add)
    }

    fn push(&mut self, shape: Vec<usize>, kind: NodeKind, degree: u32) -> usize {
        self.nodes.push(Node {
            strides: interp::strides(&shape),
            shape,
            kind,
            degree,
        });
        self.nodes.len() - 1
    }

    /// Adds the statements of `def` (parameters already in `env`) and
    /// returns its output versions.
    fn body(
        &mut self,
        program: &Program,
        def: &Def,
        sizes: &HashMap<String, i64>,
        scalars: &HashMap<String, Val>,
        mut env: HashMap<String, usize>,
        depth: usize,
    ) -> Result<Vec<usize>, String> {
        if depth > MAX_CALL_DEPTH {
            return Err(format!("calls nest more than {MAX_CALL_DEPTH} deep"));
        }
        for (i, s) in def.stmts.iter().enumerate() {
            let at = format!("`{}` statement {}", def.name, i + 1);
            match s {
                Stmt::Comp(c) => {
                    let shape = shape(def, &c.tensor, sizes).map_err(|e| format!("{at}: {e}"))?;
                    let scope = Scope {
                        def,
                        comp: c,
                        at: at.clone(),
                        env: &env,
                        nodes: &self.nodes,
                        sizes,
                        scalars,
                        slots: HashMap::new(),
                        real: self.real,
                    };
                    let comp = compile_comp(scope, &shape).map_err(|e| format!("{at}: {e}"))?;
                    let prev = match env.get(&c.tensor) {
                        Some(&n) => n,
                        None => self.push(shape.clone(), NodeKind::Zeros, 0),
                    };
                    // Elements keep the earlier version's value where the
                    // statement accumulates or does not write.
                    let mut degree = self.degree(&comp.body);
                    if comp.accumulate || !covers(&comp, &shape) {
                        degree = degree.max(self.nodes[prev].degree);
                    }
                    let kind = NodeKind::Comp {
                        comp: Box::new(comp),
                        prev,
                    };
                    let n = self.push(shape, kind, degree);
                    env.insert(c.tensor.clone(), n);
                }
                Stmt::Call(call) => {
                    let outs = self
                        .call(program, def, call, sizes, scalars, &env, depth)
                        .map_err(|e| format!("{at}: {e}"))?;
                    for (r, n) in call.results.iter().zip(outs) {
                        let want = shape(def, r, sizes).map_err(|e| format!("{at}: {e}"))?;
                        if want != self.nodes[n].shape {
                            return Err(format!(
                                "{at}: `{}` returns shape {} for `{r}`, which is declared {}",
                                call.callee,
                                show(&self.nodes[n].shape),
                                show(&want)
                            ));
                        }
                        env.insert(r.clone(), n);
                    }
                }
                Stmt::Loop(_) | Stmt::If(_) => {
                    return Err(format!(
                        "{at}: a loop or branch region, which the exact test does not take"
                    ))
                }
            }
        }
        def.outputs
            .iter()
            .map(|o| {
                env.get(o)
                    .copied()
                    .ok_or_else(|| format!("output `{o}` of `{}` is never defined", def.name))
            })
            .collect()
    }

    /// Inlines a call; returns the versions of its results.
    #[allow(clippy::too_many_arguments)]
    fn call(
        &mut self,
        program: &Program,
        def: &Def,
        call: &ir::CallStmt,
        sizes: &HashMap<String, i64>,
        scalars: &HashMap<String, Val>,
        env: &HashMap<String, usize>,
        depth: usize,
    ) -> Result<Vec<usize>, String> {
        let callee = program
            .def(&call.callee)
            .ok_or_else(|| format!("a call of unknown def `{}`", call.callee))?;
        if callee.params.len() != call.args.len() || callee.outputs.len() != call.results.len() {
            return Err(format!(
                "the call of `{}` does not match its signature",
                callee.name
            ));
        }
        let (mut inner_env, mut shapes) = (HashMap::new(), Vec::new());
        let (mut given, mut inner_scalars) = (HashMap::new(), HashMap::new());
        for (p, a) in callee.params.iter().zip(&call.args) {
            match (p, a) {
                (Param::Tensor(name), CallArg::Tensor(t)) => {
                    let n = *env
                        .get(t)
                        .ok_or_else(|| format!("`{t}` is read before it is defined"))?;
                    shapes.push(self.nodes[n].shape.clone());
                    inner_env.insert(name.clone(), n);
                }
                (Param::Scalar { name, dtype }, CallArg::Scalar(e)) => {
                    match scalar_arg(def, e, sizes, scalars, dtype.is_float(), self.real)? {
                        ScalarArg::Float(v) => inner_scalars.insert(name.clone(), v).map(drop),
                        ScalarArg::Int(i) => given.insert(name.clone(), i).map(drop),
                    };
                }
                _ => {
                    return Err(format!(
                        "the argument for `{}` of `{}` is of the wrong kind",
                        p.name(),
                        callee.name
                    ))
                }
            }
        }
        let inner_sizes = bind_from_shapes(callee, &shapes, given)?;
        self.body(
            program,
            callee,
            &inner_sizes,
            &inner_scalars,
            inner_env,
            depth + 1,
        )
        .map_err(|e| format!("in the call of `{}`: {e}", callee.name))
    }

    /// The degree bound of a compiled body.
    fn degree(&self, v: &Val) -> u32 {
        match v {
            Val::Const(..) | Val::Iter(_) | Val::Ord(_) => 0,
            Val::Scalar(_) => 1,
            Val::Read(r) => self.nodes[r.node].degree,
            Val::Neg(a) | Val::Inv(a) => self.degree(a),
            Val::Add(a, b) | Val::Sub(a, b) | Val::Select(_, a, b) => {
                self.degree(a).max(self.degree(b))
            }
            Val::Mul(a, b) => self.degree(a).saturating_add(self.degree(b)),
            // No polynomial: the bound is only read by the exact test,
            // which such a graph never takes.
            Val::Real(_, args) => args.iter().map(|a| self.degree(a)).max().unwrap_or(0),
        }
    }
}

/// Whether the statement writes every element of its tensor.
pub(crate) fn covers(comp: &Comp, shape: &[usize]) -> bool {
    comp.bounds
        .iter()
        .zip(shape)
        .all(|(&(lo, hi), &n)| lo == 0 && hi == n as i64)
}

/// A call's scalar argument, compiled in the caller outside any statement:
/// a float one as a value over Z_p, an integer one (a size) to its value.
fn scalar_arg(
    def: &Def,
    e: &ir::Expr,
    sizes: &HashMap<String, i64>,
    scalars: &HashMap<String, Val>,
    float: bool,
    real: bool,
) -> Result<ScalarArg, String> {
    let comp = empty_comp();
    let scope = Scope {
        def,
        comp: &comp,
        at: String::new(),
        env: &HashMap::new(),
        nodes: &[],
        sizes,
        scalars,
        slots: HashMap::new(),
        real,
    };
    if float {
        return scope.value(e).map(ScalarArg::Float);
    }
    match scope.ordinary(e)?.eval(&[])? {
        ir::Value::Int(i) => Ok(ScalarArg::Int(i)),
        v => Err(format!(
            "the integer argument is {}",
            ir::arith::show_value(v)
        )),
    }
}

enum ScalarArg {
    Float(Val),
    Int(i64),
}

/// A comprehension with no iterators or lets, to compile call arguments in.
fn empty_comp() -> ir::Comprehension {
    ir::Comprehension {
        tensor: String::new(),
        indices: Vec::new(),
        op: ir::Reduction::Assign,
        init: false,
        body: ir::Expr::int(0),
        ranges: Vec::new(),
        lets: Vec::new(),
        exists: Vec::new(),
    }
}
