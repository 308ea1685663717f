//! The search representation (PET §6 with Tensat's e-graphs): a def of
//! operator calls at concrete sizes as an e-graph whose e-classes are its
//! tensors, saturated by the proved rewrite rules within limits, and
//! extracted by cost back into a def.
//!
//! Requires a def whose statements are calls of single-result defs with
//! literal or size-symbol scalar arguments (the form ONNX import and
//! `split`'s multi-linear parts give) or comprehensions, each tensor
//! written once; a comprehension is an opaque node (`analysis::Opaque`)
//! no rule rewrites, written back as it was. Guarantees: every member of an
//! e-class was proven equal to the others by a rule the tests prove
//! ([`rewrite`]), and [`Search::to_def`] writes a def with the original's
//! signature computing what the extraction chose.

pub mod analysis;
pub mod extract;
pub mod lang;
pub mod rewrite;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use egg::{Id, Runner, StopReason};
use ir::{
    CallArg, CallStmt, Comprehension, Def, Expr, IterRange, Param, Program, Reduction, SizeExpr,
    Stmt, TensorDecl, TensorRole, Value,
};

use analysis::{Graph, Shapes};
use lang::Node;

/// Where saturation stops.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub iterations: usize,
    pub nodes: usize,
    pub time: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            iterations: 8,
            nodes: 20_000,
            time: Duration::from_secs(2),
        }
    }
}

/// A statement of the original def and the class of its result.
#[derive(Clone, Debug)]
pub struct Statement {
    /// Its index among the def's statements, from 0.
    pub index: usize,
    pub result: String,
    /// The callee, or `comprehension`.
    pub op: String,
    pub class: Id,
    /// Its node (children canonical when it was added).
    pub node: Node,
}

/// A def's e-graph: the graph and the class of each output, in order.
#[derive(Debug)]
pub struct Search {
    pub egraph: Graph,
    pub outputs: Vec<(String, Id)>,
    /// The original def's statements (their classes canonical after
    /// saturation).
    pub statements: Vec<Statement>,
    /// The element type of each input tensor.
    input_types: HashMap<String, ir::DType>,
    /// Why saturation stopped, once it ran.
    pub stopped: Option<String>,
    /// The generated defs whose calls joined classes: mutants
    /// (`optimize::mutate`) and derived programs (`optimize::derivation`).
    pub mutants: Vec<crate::mutant::Mutant>,
    /// The inputs known when the program is loaded (a model's weights):
    /// what reads only them runs once, at load (`crate::hoist`), so the
    /// extraction counts it as free.
    pub constants: HashSet<String>,
}

impl Search {
    /// The e-graph of def `name` of `program` at `sizes` (every size
    /// symbol and integer scalar of the def).
    pub fn new(
        program: Arc<Program>,
        name: &str,
        sizes: &HashMap<String, i64>,
    ) -> Result<Search, String> {
        let def = program
            .def(name)
            .ok_or_else(|| format!("no def named `{name}`"))?;
        let shape = |t: &str| -> Result<Vec<i64>, String> {
            let decl = def
                .tensor(t)
                .ok_or_else(|| format!("`{t}` has no declaration"))?;
            decl.shape
                .iter()
                .map(|d| {
                    d.eval_map(sizes)
                        .map_err(|e| format!("the shape of `{t}`: {e}"))
                })
                .collect()
        };
        let mut inputs = HashMap::new();
        for p in &def.params {
            match p {
                Param::Tensor(t) => {
                    inputs.insert(t.clone(), shape(t)?);
                }
                Param::Scalar { name, dtype } if dtype.is_int() => {}
                Param::Scalar { name, .. } => {
                    return Err(format!(
                        "`{name}` is a floating-point scalar parameter; the e-graph takes tensors and sizes"
                    ))
                }
            }
        }
        let mut egraph = Graph::new(Shapes {
            program: Arc::clone(&program),
            inputs: inputs.clone(),
            opaque: Vec::new(),
            origins: Vec::new(),
        });
        let mut class: HashMap<String, Id> = HashMap::new();
        for t in inputs.keys() {
            class.insert(t.clone(), egraph.add(lang::input(t)));
        }
        let mut statements = Vec::new();
        let at_sizes = crate::derive::at_sizes(def, sizes);
        for (k, s) in def.stmts.iter().enumerate() {
            let at = |what: String| format!("statement {} of `{name}`: {what}", k + 1);
            let (node, result, op) = match s {
                Stmt::Loop(_) | Stmt::If(_) => {
                    return Err(at(
                        "a loop or branch region; the e-graph takes straight-line defs".into(),
                    ))
                }
                Stmt::Call(call) => {
                    let [result] = call.results.as_slice() else {
                        return Err(at(format!(
                            "a call of {} results; the e-graph takes calls of one",
                            call.results.len()
                        )));
                    };
                    let mut kids = Vec::new();
                    for a in &call.args {
                        kids.push(match a {
                            CallArg::Tensor(t) => *class
                                .get(t)
                                .ok_or_else(|| at(format!("`{t}` is not computed yet")))?,
                            CallArg::Scalar(e) => {
                                egraph.add(scalar(e, sizes).ok_or_else(|| {
                                    at("a scalar argument that is not a literal or a size".into())
                                })?)
                            }
                        });
                    }
                    let op = egg::Symbol::from(call.callee.as_str());
                    (Node::Call(op, kids), result, call.callee.clone())
                }
                Stmt::Comp(c) => {
                    if class.contains_key(&c.tensor) {
                        return Err(at(format!(
                            "`{}` is written a second time; the e-graph takes tensors written once",
                            c.tensor
                        )));
                    }
                    let mut reads: Vec<String> = Vec::new();
                    let mut note = |e: &Expr| {
                        for (t, _) in e.reads() {
                            if !reads.iter().any(|r| r == t) {
                                reads.push(t.to_string());
                            }
                        }
                    };
                    c.lets.iter().for_each(|(_, e)| note(e));
                    note(&c.body);
                    let kids = reads
                        .iter()
                        .map(|t| {
                            class
                                .get(t)
                                .copied()
                                .ok_or_else(|| at(format!("`{t}` is read before it is written")))
                        })
                        .collect::<Result<Vec<Id>, String>>()?;
                    let decl = def
                        .tensor(&c.tensor)
                        .ok_or_else(|| at(format!("`{}` has no declaration", c.tensor)))?;
                    let op = lang::opaque(egraph.analysis.opaque.len());
                    let Stmt::Comp(concrete) = &at_sizes.stmts[k] else {
                        return Err(at(
                            "internal error: a statement changed kind at the sizes".into()
                        ));
                    };
                    let alone = alone(def, concrete, &reads, &shape)?;
                    egraph.analysis.opaque.push(analysis::Opaque {
                        comp: c.clone(),
                        reads,
                        shape: shape(&c.tensor)?,
                        dtype: decl.dtype,
                        alone,
                    });
                    (Node::Call(op, kids), &c.tensor, "comprehension".to_string())
                }
            };
            let id = egraph.add(node.clone());
            if let analysis::Data::Invalid(why) = &egraph[id].data {
                return Err(at(why.clone()));
            }
            class.insert(result.clone(), id);
            statements.push(Statement {
                index: k,
                result: result.clone(),
                op,
                class: id,
                node,
            });
        }
        let outputs = def
            .outputs
            .iter()
            .map(|o| {
                class
                    .get(o)
                    .map(|id| (o.clone(), *id))
                    .ok_or_else(|| format!("output `{o}` is never computed"))
            })
            .collect::<Result<_, String>>()?;
        egraph.rebuild();
        Ok(Search {
            egraph,
            outputs,
            statements,
            input_types: def
                .tensors
                .iter()
                .filter(|t| t.role == TensorRole::Input)
                .map(|t| (t.name.clone(), t.dtype))
                .collect(),
            stopped: None,
            mutants: Vec::new(),
            constants: HashSet::new(),
        })
    }

    /// Saturates the e-graph with `rules` within `limits`.
    pub fn saturate(&mut self, rules: &[egg::Rewrite<Node, Shapes>], limits: Limits) {
        let analysis = self.egraph.analysis.clone();
        let egraph = std::mem::replace(&mut self.egraph, Graph::new(analysis.clone()));
        let runner: Runner<Node, Shapes> = Runner::new(analysis)
            .with_egraph(egraph)
            .with_iter_limit(limits.iterations)
            .with_node_limit(limits.nodes)
            .with_time_limit(limits.time)
            .run(rules);
        self.stopped = runner.stop_reason.as_ref().map(|r| match r {
            StopReason::Saturated => "saturated".to_string(),
            StopReason::IterationLimit(n) => format!("{n} iterations"),
            StopReason::NodeLimit(n) => format!("{n} nodes"),
            StopReason::TimeLimit(s) => format!("{s:.1} s"),
            StopReason::Other(why) => why.clone(),
        });
        self.egraph = runner.egraph;
        self.canonicalize();
    }

    /// Makes the outputs' and statements' classes canonical after the
    /// e-graph changed.
    pub fn canonicalize(&mut self) {
        for (_, id) in &mut self.outputs {
            *id = self.egraph.find(*id);
        }
        for s in &mut self.statements {
            s.class = self.egraph.find(s.class);
        }
    }

    /// A def named `name` with the signature of `original` computing the
    /// chosen nodes: one call statement per chosen class reachable from
    /// the outputs, in dependency order (an output whose class chose an
    /// input is a copy of it).
    pub fn to_def(
        &self,
        original: &Def,
        choice: &extract::Choice,
        name: &str,
    ) -> Result<Def, String> {
        let mut def = Def {
            name: name.to_string(),
            params: original.params.clone(),
            outputs: original.outputs.clone(),
            tensors: original
                .tensors
                .iter()
                .filter(|t| t.role == TensorRole::Input)
                .cloned()
                .collect(),
            stmts: Vec::new(),
        };
        let mut named: HashMap<Id, String> = HashMap::new();
        for (input, id) in self.input_classes() {
            named.insert(id, input);
        }
        for (output, id) in &self.outputs {
            // Each output has its own statement, even when another output
            // or an input holds the same value: a call, or a copy of the
            // input the output's class chose.
            let stmt = match choice.node(*id)? {
                Node::Call(..) => self.statement(*id, output, choice, &mut named, &mut def)?,
                _ => {
                    let from =
                        match self.argument(*id, ir::DType::F32, choice, &mut named, &mut def)? {
                            CallArg::Tensor(t) => t,
                            CallArg::Scalar(_) => {
                                return Err(format!(
                                    "internal error: output `{output}` chose a scalar"
                                ))
                            }
                        };
                    self.copy(output, &from, *id)
                }
            };
            self.declare(&mut def, output, *id, TensorRole::Output, choice);
            def.stmts.push(stmt);
            named.entry(*id).or_insert_with(|| output.clone());
        }
        Ok(def)
    }

    /// Writes into `def` the statements computing class `root` into
    /// tensor `result` as `choice` computes it, from the classes `leaves`
    /// names (the caller declares those): the chosen nodes between them,
    /// `root` computed from its own node even when `leaves` names it. A
    /// root that chose an input is a copy of it.
    pub fn write_region(
        &self,
        root: Id,
        result: &str,
        leaves: &HashMap<Id, String>,
        choice: &extract::Choice,
        def: &mut Def,
    ) -> Result<(), String> {
        let root = self.egraph.find(root);
        let mut named = leaves.clone();
        named.remove(&root);
        let stmt = match choice.node(root)? {
            Node::Call(..) => self.statement(root, result, choice, &mut named, def)?,
            Node::Leaf(s) => match lang::leaf_kind(s) {
                Some(lang::LeafKind::Input(input)) => self.copy(result, input, root),
                _ => return Err(format!("internal error: e-class {root} chose a float")),
            },
            Node::Int(_) => return Err(format!("internal error: e-class {root} chose an integer")),
        };
        self.declare(def, result, root, TensorRole::Output, choice);
        def.stmts.push(stmt);
        Ok(())
    }

    /// `node` with its children's classes canonical.
    pub fn canonical(&self, node: &Node) -> Node {
        let mut n = node.clone();
        for kid in egg::Language::children_mut(&mut n) {
            *kid = self.egraph.find(*kid);
        }
        n
    }

    /// The original statements' nodes, their children canonical now.
    pub fn original_nodes(&self) -> Vec<Node> {
        self.statements
            .iter()
            .map(|s| self.canonical(&s.node))
            .collect()
    }

    /// The classes of the def's inputs, by name.
    fn input_classes(&self) -> Vec<(String, Id)> {
        self.egraph
            .analysis
            .inputs
            .keys()
            .filter_map(|t| Some((t.clone(), self.egraph.lookup(lang::input(t))?)))
            .collect()
    }

    /// The arguments of class `id`'s chosen call, their own calls written
    /// into `def` first.
    fn operands(
        &self,
        id: Id,
        choice: &extract::Choice,
        named: &mut HashMap<Id, String>,
        def: &mut Def,
    ) -> Result<Vec<CallArg>, String> {
        let Node::Call(op, kids) = choice.node(id)? else {
            return Ok(Vec::new());
        };
        // A literal takes its parameter's type.
        let callee = self.egraph.analysis.program.def(op.as_str());
        kids.iter()
            .enumerate()
            .map(|(k, &kid)| {
                let dtype = match callee.and_then(|d| d.params.get(k)) {
                    Some(Param::Scalar { dtype, .. }) => *dtype,
                    _ => ir::DType::F32,
                };
                self.argument(kid, dtype, choice, named, def)
            })
            .collect()
    }

    /// Class `id` as a call argument: a tensor's name (its statement
    /// written when it is first needed) or a scalar literal of `dtype`.
    fn argument(
        &self,
        id: Id,
        dtype: ir::DType,
        choice: &extract::Choice,
        named: &mut HashMap<Id, String>,
        def: &mut Def,
    ) -> Result<CallArg, String> {
        let id = self.egraph.find(id);
        if let Some(name) = named.get(&id) {
            return Ok(CallArg::Tensor(name.clone()));
        }
        Ok(match choice.node(id)? {
            Node::Int(v) => CallArg::Scalar(Expr::Lit(Value::Int(*v), dtype)),
            Node::Leaf(s) => match lang::leaf_kind(s) {
                Some(lang::LeafKind::Float(v)) => {
                    CallArg::Scalar(Expr::Lit(Value::Float(v), dtype))
                }
                _ => CallArg::Tensor(s.as_str().trim_start_matches('%').to_string()),
            },
            Node::Call(..) => {
                let result = format!("_e{}", usize::from(id));
                let stmt = self.statement(id, &result, choice, named, def)?;
                self.declare(def, &result, id, TensorRole::Temp, choice);
                def.stmts.push(stmt);
                named.insert(id, result.clone());
                CallArg::Tensor(result)
            }
        })
    }

    /// The statement computing class `id`'s chosen call into `result`
    /// (its operands' statements written into `def` first): a call, or an
    /// opaque statement's comprehension reading the operands' names.
    fn statement(
        &self,
        id: Id,
        result: &str,
        choice: &extract::Choice,
        named: &mut HashMap<Id, String>,
        def: &mut Def,
    ) -> Result<Stmt, String> {
        let Node::Call(op, _) = choice.node(id)? else {
            return Err(format!("internal error: e-class {id} chose no call"));
        };
        let args = self.operands(id, choice, named, def)?;
        let Some(k) = lang::opaque_index(op) else {
            return Ok(Stmt::Call(CallStmt {
                callee: op.as_str().to_string(),
                args,
                results: vec![result.to_string()],
            }));
        };
        let o = &self.egraph.analysis.opaque[k];
        let mut rename: HashMap<&str, String> = HashMap::new();
        for (read, arg) in o.reads.iter().zip(args) {
            if let CallArg::Tensor(t) = arg {
                rename.insert(read, t);
            }
        }
        let mut comp = o.comp.clone();
        comp.tensor = result.to_string();
        comp.rename_reads(&|t| rename.get(t).cloned());
        Ok(Stmt::Comp(comp))
    }

    /// The element type of class `id`'s value as `choice` computes it.
    fn dtype(&self, id: Id, choice: &extract::Choice) -> ir::DType {
        let program = &self.egraph.analysis.program;
        match choice.node(id) {
            Ok(Node::Call(op, _)) => match lang::opaque_index(op) {
                Some(k) => self.egraph.analysis.opaque[k].dtype,
                None => program
                    .def(op.as_str())
                    .and_then(|d| d.tensor(d.outputs.first()?))
                    .map_or(ir::DType::F32, |t| t.dtype),
            },
            Ok(Node::Leaf(s)) => match lang::leaf_kind(s) {
                Some(lang::LeafKind::Input(name)) => self
                    .input_types
                    .get(name)
                    .copied()
                    .unwrap_or(ir::DType::F32),
                _ => ir::DType::F32,
            },
            _ => ir::DType::F32,
        }
    }

    /// `to = from` element by element, at class `id`'s shape.
    fn copy(&self, to: &str, from: &str, id: Id) -> Stmt {
        let shape = match &self.egraph[id].data {
            analysis::Data::Tensor(s) => s.clone(),
            _ => Vec::new(),
        };
        let indices: Vec<String> = (0..shape.len()).map(|d| format!("i{d}")).collect();
        Stmt::Comp(Comprehension {
            tensor: to.to_string(),
            indices: indices.clone(),
            op: Reduction::Assign,
            init: false,
            body: Expr::Read(
                from.to_string(),
                indices.iter().map(|i| Expr::Iter(i.clone())).collect(),
            ),
            ranges: indices
                .iter()
                .zip(&shape)
                .map(|(i, &n)| IterRange {
                    name: i.clone(),
                    lo: SizeExpr::zero(),
                    hi: SizeExpr::constant(n),
                })
                .collect(),
            lets: Vec::new(),
            exists: Vec::new(),
        })
    }

    /// Declares tensor `name` of class `id`'s shape.
    fn declare(
        &self,
        def: &mut Def,
        name: &str,
        id: Id,
        role: TensorRole,
        choice: &extract::Choice,
    ) {
        let shape = match &self.egraph[id].data {
            analysis::Data::Tensor(s) => s.iter().map(|&n| SizeExpr::constant(n)).collect(),
            _ => Vec::new(),
        };
        def.tensors.push(TensorDecl {
            name: name.to_string(),
            dtype: self.dtype(id, choice),
            shape,
            role,
        });
    }
}

/// A call's scalar argument as a node: an integer or float literal, or a
/// size symbol's value.
fn scalar(e: &Expr, sizes: &HashMap<String, i64>) -> Option<Node> {
    match e {
        Expr::Lit(Value::Int(v), _) => Some(Node::Int(*v)),
        Expr::Lit(Value::Float(v), _) => Some(lang::float(*v)),
        Expr::Sym(s) => sizes.get(s).map(|v| Node::Int(*v)),
        // The checker narrows a size passed to an `int32` parameter.
        Expr::Cast(t, x) if t.is_int() => match scalar(x, sizes)? {
            Node::Int(v) => match ir::arith::cast_value(*t, Value::Int(v)) {
                Value::Int(w) => Some(Node::Int(w)),
                _ => None,
            },
            _ => None,
        },
        Expr::Unary(ir::UnOp::Neg, x) => match scalar(x, sizes)? {
            Node::Int(v) => Some(Node::Int(-v)),
            Node::Leaf(s) => match lang::leaf_kind(&s) {
                Some(lang::LeafKind::Float(v)) => Some(lang::float(-v)),
                _ => None,
            },
            Node::Call(..) => None,
        },
        _ => None,
    }
}

/// Comprehension `c` (at the sizes) of `def` alone, as a def over its
/// `reads` renamed `x0`, `x1`, ... returning `y`.
fn alone(
    def: &Def,
    c: &Comprehension,
    reads: &[String],
    shape: &dyn Fn(&str) -> Result<Vec<i64>, String>,
) -> Result<Def, String> {
    let decl = |t: &str, name: String, role: TensorRole| -> Result<TensorDecl, String> {
        let d = def
            .tensor(t)
            .ok_or_else(|| format!("`{t}` has no declaration"))?;
        Ok(TensorDecl {
            name,
            dtype: d.dtype,
            shape: shape(t)?.into_iter().map(SizeExpr::constant).collect(),
            role,
        })
    };
    let mut tensors = Vec::new();
    for (k, t) in reads.iter().enumerate() {
        tensors.push(decl(t, format!("x{k}"), TensorRole::Input)?);
    }
    tensors.push(decl(&c.tensor, "y".to_string(), TensorRole::Output)?);
    let mut comp = c.clone();
    comp.tensor = "y".to_string();
    comp.rename_reads(&|t| reads.iter().position(|r| r == t).map(|k| format!("x{k}")));
    Ok(Def {
        name: "alone".to_string(),
        params: (0..reads.len())
            .map(|k| Param::Tensor(format!("x{k}")))
            .collect(),
        outputs: vec!["y".to_string()],
        tensors,
        stmts: vec![Stmt::Comp(comp)],
    })
}
