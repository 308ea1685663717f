//! Importing a loaded model: the graph's nodes sorted topologically, each
//! imported by its operator's importer (`ops/`) into calls of prelude defs
//! and generated ones (`forms.rs`) or folded when its inputs are constants, and the model def checked by
//! the TC checker together with the prelude.
//!
//! Requires: a model from `load.rs`. Guarantees: never panics; a model
//! tessera cannot import is an error naming the node, its operator and
//! the attribute or input at fault; `problems` lists every problem the
//! import meets (each node that fails; the nodes reading its outputs are
//! not tried), which `tessera info` reports, the first of them the
//! import's error; an imported program passes
//! `ir::verify_program`, and every statement's result has the shape the
//! importer computed (checked here, after the TC checker infers them).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use ir::DType;
use tensor::Tensor;

use crate::build::{Builder, Node, Value, Var};
use crate::load::{self, Files, Loaded};
use crate::proto::{GraphProto, ValueInfoProto};
use crate::Error;

/// The operator prelude, whose defs every imported model calls.
pub const PRELUDE: &str = include_str!("../../../ops/prelude.tc");

/// The name of the imported model's def.
pub const MODEL_DEF: &str = "model";

/// A graph input or output: its ONNX name, its TC name, type and shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Port {
    pub onnx: String,
    pub tc: String,
    pub dtype: DType,
    pub shape: Vec<usize>,
}

/// An imported model.
#[derive(Debug)]
pub struct Model {
    /// The prelude, the generated defs and the model def, checked: the
    /// program and where its statements are in `text`.
    pub checked: tc::Checked,
    /// The text that was checked: the prelude, then `source`.
    pub text: String,
    /// The generated defs and the model def as TC source.
    pub source: String,
    pub inputs: Vec<Port>,
    pub outputs: Vec<Port>,
    /// The constants the model def takes as parameters, by TC name.
    pub weights: Vec<(String, Tensor)>,
    /// For each statement of the model def, the node it was imported from
    /// (`node `name` (Op)`), for messages; `None` for the copies the
    /// importer adds after the nodes.
    pub nodes: Vec<Option<String>>,
    /// The weights the import packed into kernel layouts.
    pub packing: crate::Packing,
    /// The graph inputs whose values the import read where an operator
    /// needs a constant (a reduction's axes, a reshape's shape): the model
    /// def is specialized on them, as it is on the input sizes.
    pub specialized: Vec<String>,
    /// The graph inputs with an empty dimension (`tc` is empty): they hold
    /// no elements, so the import knows them whole and the model def does
    /// not take them (an empty `axes`, the type-only input of `CastLike`).
    /// A caller still gives them, of their declared type and shape.
    pub empty: Vec<Port>,
    /// The tensors the model computes (by ONNX name) whose values the
    /// import read, given by the caller: the model def is specialized on
    /// them.
    pub computed_read: Vec<String>,
    /// The runtime steps ([`crate::Step`]): weights of the model def
    /// computed from a tensor the model computes, whose shapes the model
    /// def is specialized on.
    pub steps: Vec<crate::Step>,
}

/// What importing needs to know besides the model.
pub struct Importer<'a> {
    pub files: &'a Files,
    pub opset: i64,
    pub values: HashMap<String, Value>,
    /// The values held channel-blocked (`ops::blocked`), by ONNX name; one
    /// held only blocked is not in `values` until a reader needs it plain.
    pub blocked: HashMap<String, crate::ops::blocked::Blocked>,
    /// How many nodes and graph outputs read each value, by ONNX name (a
    /// result read once may be computed into its reader's kernel).
    pub readers: HashMap<String, usize>,
    /// Transposes of the last two axes not computed yet (`ops::swap`), by
    /// ONNX name: the tensor each transposes.
    pub swapped: HashMap<String, Var>,
    /// The graph inputs by TC name: the ONNX name, and the value if the
    /// caller gave one, which `constant` reads for an input an operator
    /// needs as a constant.
    pub given: HashMap<String, (String, Option<Tensor>)>,
    /// The ONNX names of the given inputs `constant` read.
    pub specialized: std::cell::RefCell<std::collections::BTreeSet<String>>,
    /// The values of tensors the model computes, by ONNX name, given by a
    /// caller that ran the model up to them, which `constant` reads.
    pub computed: HashMap<String, Tensor>,
    /// The ONNX names of the tensors the model computes whose values
    /// `constant` was asked for and not given.
    pub needs: std::cell::RefCell<std::collections::BTreeSet<String>>,
    /// The ONNX names of the tensors in `computed` that `constant` read.
    pub computed_read: std::cell::RefCell<std::collections::BTreeSet<String>>,
    /// The runtime steps made so far.
    pub steps: Vec<crate::Step>,
    pub b: Builder,
}

/// Imports the model at `path`; `sizes` binds symbolic input dimensions
/// (`dim_param` names).
pub fn import(path: &Path, sizes: &HashMap<String, i64>) -> Result<Model, Error> {
    import_loaded(load::load(path)?, sizes, &HashMap::new(), &HashMap::new())
}

/// Imports a loaded model. Symbolic input dimensions take their values from
/// `sizes` or, failing that, from `shapes`: the shapes of the tensors the
/// caller will bind to the graph inputs of those names (a dynamic batch
/// size read off the input file). `values` are the values the caller will
/// bind to graph inputs, of which the import reads those an operator needs
/// as a constant ([`Model::specialized`]). The error is of kind
/// [`crate::ErrorKind::Unsupported`] for a node of an operator no importer
/// handles ([`check_operators`]), else [`crate::ErrorKind::Shape`] when the
/// sizes and shapes do not fit the inputs' declared shapes, else the first
/// of [`problems`] (of kind [`crate::ErrorKind::NeedsValue`] when it is an
/// input whose value was not given); but when an operator needs the value
/// of a tensor the model computes and `values` has none for it, of kind
/// [`crate::ErrorKind::NeedsComputed`], naming every such tensor the
/// import met. `values` may hold tensors the model computes (by their ONNX
/// names), which a caller found by running the model up to them
/// ([`cut`]).
pub fn import_loaded(
    loaded: Loaded,
    sizes: &HashMap<String, i64>,
    shapes: &HashMap<String, Vec<usize>>,
    values: &HashMap<String, Tensor>,
) -> Result<Model, Error> {
    // An operator tessera lacks is told first: no sizes would help.
    check_operators(&loaded)?;
    if let Some(graph) = loaded.model.graph.as_ref() {
        bind_symbols(graph, sizes, shapes).map_err(Error::shape)?;
    }
    let mut needs = Vec::new();
    import_all(loaded, sizes, shapes, values, &mut needs).map_err(|mut problems| {
        let first = problems.swap_remove(0);
        if first.contains(crate::ops::NEEDS_VALUE) {
            Error::needs_value(first)
        } else if !needs.is_empty() {
            let message = problems
                .into_iter()
                .chain([first])
                .find(|p| p.contains(crate::ops::NEEDS_COMPUTED))
                .unwrap_or_default();
            Error::needs_computed(message, needs)
        } else {
            Error::invalid(first)
        }
    })
}

/// The first node of `loaded` whose operator (or form of it) no importer
/// handles, as an error of kind [`crate::ErrorKind::Unsupported`]. Needs no
/// sizes, so a model with symbolic inputs is checked before any shape is
/// known.
pub fn check_operators(loaded: &Loaded) -> Result<(), Error> {
    let Some(graph) = loaded.model.graph.as_ref() else {
        return Ok(());
    };
    for (k, node) in graph.node.iter().enumerate() {
        if let Some(why) = crate::ops::unsupported(&Node::new(node, k), loaded.opset) {
            return Err(Error::unsupported(why));
        }
    }
    Ok(())
}

/// Every reason the import of `loaded` fails, in the order the import
/// meets them, led by the unsupported operator [`import_loaded`] reports
/// before any other problem; none when it succeeds. `tessera info` reports
/// these, so that it never calls a model supported that `run` refuses.
pub fn problems(loaded: Loaded, sizes: &HashMap<String, i64>) -> Vec<String> {
    let unsupported = check_operators(&loaded).err();
    let mut all = import_all(
        loaded,
        sizes,
        &HashMap::new(),
        &HashMap::new(),
        &mut Vec::new(),
    )
    .err()
    .unwrap_or_default();
    // A value the model computes is known when it runs: no problem.
    all.retain(|p| !p.contains(crate::ops::NEEDS_COMPUTED));
    if let Some(e) = unsupported {
        if !all.contains(&e.message) {
            all.insert(0, e.message);
        }
    }
    all
}

/// A problem that stops the import where it is met.
fn one(problem: String) -> Vec<String> {
    vec![problem]
}

/// The import, with every node it cannot import: such a node's outputs
/// become unknown and the nodes that read them are not tried (whether they
/// import depends on what the failed node would compute). Any other problem
/// (the graph's inputs, initializers, order and outputs, the checks of the
/// model def) stops the import. The tensors the model computes whose values
/// an operator needed and `values` lacks go to `needs`.
fn import_all(
    mut loaded: Loaded,
    sizes: &HashMap<String, i64>,
    shapes: &HashMap<String, Vec<usize>>,
    values: &HashMap<String, Tensor>,
    needs: &mut Vec<String>,
) -> Result<Model, Vec<String>> {
    let graph = loaded
        .model
        .graph
        .as_mut()
        .ok_or_else(|| one("the model has no graph".to_string()))?;
    let sizes = &bind_symbols(graph, sizes, shapes).map_err(one)?;
    // Each initializer's protobuf (its raw bytes) is dropped as soon as it
    // is converted, so that the weights are held once, not twice.
    let initializers = std::mem::take(&mut graph.initializer);
    let graph = &*graph;
    let mut im = Importer {
        files: &loaded.files,
        opset: loaded.opset,
        values: HashMap::new(),
        blocked: HashMap::new(),
        readers: HashMap::new(),
        swapped: HashMap::new(),
        given: HashMap::new(),
        specialized: Default::default(),
        computed: HashMap::new(),
        needs: Default::default(),
        computed_read: Default::default(),
        steps: Vec::new(),
        b: Builder::default(),
    };
    for name in graph
        .node
        .iter()
        .flat_map(|n| n.input.iter())
        .chain(graph.output.iter().filter_map(|o| o.name.as_ref()))
    {
        *im.readers.entry(name.clone()).or_default() += 1;
    }
    for t in initializers {
        let name = t.name.clone().unwrap_or_default();
        let tensor =
            load::tensor(&t, &loaded.files, &format!("initializer `{name}`")).map_err(one)?;
        im.values.insert(name, Value::Const(tensor));
    }
    let mut inputs = Vec::new();
    let mut empty = Vec::new();
    let mut used_names = std::collections::HashSet::new();
    for (k, vi) in graph.input.iter().enumerate() {
        let onnx = vi.name.clone().unwrap_or_default();
        if im.values.contains_key(&onnx) {
            // An initializer listed as an input too (older exporters): a
            // constant, which a caller could override; tessera keeps it.
            continue;
        }
        let (dtype, shape) = value_type(vi, sizes, "input").map_err(one)?;
        if shape.contains(&0) {
            let value = Tensor::zeros(dtype, &shape);
            im.values.insert(onnx.clone(), Value::Const(value));
            empty.push(Port {
                onnx,
                tc: String::new(),
                dtype,
                shape,
            });
            continue;
        }
        let tc = tc_name(&onnx, k, &mut used_names);
        let v = im.b.param(&tc, dtype, &shape);
        let value = values
            .get(&onnx)
            .filter(|t| t.dtype() == dtype && t.shape() == shape);
        im.given.insert(tc.clone(), (onnx.clone(), value.cloned()));
        im.values.insert(onnx.clone(), Value::Var(v));
        inputs.push(Port {
            onnx,
            tc,
            dtype,
            shape,
        });
    }
    // The given values of other names than the graph inputs' are of
    // tensors the model computes.
    im.computed = values
        .iter()
        .filter(|(name, _)| !graph.input.iter().any(|i| i.name.as_ref() == Some(name)))
        .map(|(name, t)| (name.clone(), t.clone()))
        .collect();
    let constants: std::collections::HashSet<String> = im.values.keys().cloned().collect();
    // For each statement of the model def, the node it comes from.
    let mut nodes = Vec::new();
    let mut problems = Vec::new();
    // The outputs of the nodes that failed, and of the nodes not tried.
    let mut unknown = std::collections::HashSet::new();
    for (k, node) in order(graph, &constants)
        .map_err(one)?
        .into_iter()
        .enumerate()
    {
        let node = Node::new(node, k);
        if !node.proto.input.iter().any(|i| unknown.contains(i)) {
            let weights = im.b.weights.len();
            let result = crate::ops::import_node(&mut im, &node)
                .and_then(|()| node.finish())
                .and_then(|()| no_empty_weight(&im, &node, weights));
            match result {
                Ok(()) => {
                    nodes.resize(im.b.stmts.len(), Some(node.label.clone()));
                    continue;
                }
                Err(e) => problems.push(e),
            }
        }
        unknown.extend(node.proto.output.iter());
    }
    needs.extend(im.needs.take());
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut outputs = Vec::new();
    let mut taken = std::collections::HashSet::new();
    for vi in &graph.output {
        let onnx = vi.name.clone().unwrap_or_default();
        im.plain(&onnx);
        im.unswap(&onnx);
        let v = match im.values.get(&onnx) {
            Some(Value::Var(v)) => v.clone(),
            Some(Value::Const(t)) if t.shape().contains(&0) => {
                return Err(one(format!(
                "graph output `{onnx}` has shape {:?}: tessera's tensors have positive dimensions",
                t.shape()
            )))
            }
            Some(Value::Const(t)) => {
                let t = t.clone();
                im.b.weight(&onnx, &t)
            }
            None => return Err(one(format!("graph output `{onnx}` is never computed"))),
        };
        // An output must be a tensor the def computes, once.
        let is_param =
            inputs.iter().any(|p| p.tc == v.name) || im.b.weights.iter().any(|(n, _)| *n == v.name);
        let v = if is_param || !taken.insert(v.name.clone()) {
            im.b.copy(&v)
        } else {
            v
        };
        outputs.push(Port {
            onnx,
            tc: v.name.clone(),
            dtype: v.dtype,
            shape: v.shape.clone(),
        });
    }
    let source = format!(
        "{}def {MODEL_DEF}({}) -> ({}) {{\n{}\n}}\n",
        im.b.forms.text(),
        im.b.params.join(", "),
        outputs
            .iter()
            .map(|p| p.tc.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        im.b.stmts
            .iter()
            .map(|s| format!("  {s}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let text = format!("{PRELUDE}\n{source}");
    let checked = tc::check_source(&text).map_err(|d| {
        one(format!(
            "internal error: the imported model does not check:\n{}",
            tc::render_diagnostics(&d, "model", &text)
        ))
    })?;
    check_shapes(&checked.program, &im.b.expected).map_err(one)?;
    Ok(Model {
        checked,
        text,
        source,
        inputs,
        outputs,
        weights: std::mem::take(&mut im.b.weights),
        nodes,
        packing: im.b.packing,
        specialized: im.specialized.into_inner().into_iter().collect(),
        empty,
        computed_read: im.computed_read.into_inner().into_iter().collect(),
        steps: im.steps,
    })
}

/// Fails when node `n` made a tensor without elements a parameter of the
/// model def (an empty input or initializer read as a tensor): tessera's
/// tensors have positive dimensions. Only the weights from `from` on, the
/// node's own, are looked at.
fn no_empty_weight(im: &Importer, n: &Node, from: usize) -> Result<(), String> {
    match im.b.weights[from..].iter().find(|(_, t)| t.is_empty()) {
        Some(_) => {
            let empty = n
                .proto
                .input
                .iter()
                .find(|i| matches!(im.values.get(*i), Some(Value::Const(t)) if t.is_empty()));
            Err(n.error(format!(
                "input `{}` has no elements: tessera computes only on tensors with positive dimensions",
                empty.map_or("?", String::as_str)
            )))
        }
        None => Ok(()),
    }
}

/// Every statement's result has the shape and element type the importer
/// computed.
fn check_shapes(p: &ir::Program, expected: &[Var]) -> Result<(), String> {
    let def = p.def(MODEL_DEF).ok_or("internal error: no model def")?;
    for v in expected {
        let decl = def
            .tensor(&v.name)
            .ok_or_else(|| format!("internal error: `{}` is not declared", v.name))?;
        let shape = decl
            .shape
            .iter()
            .map(|d| {
                d.eval_map(&HashMap::new())
                    .ok()
                    .and_then(|x| usize::try_from(x).ok())
            })
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| format!("internal error: `{}` has no concrete shape", v.name))?;
        if shape != v.shape {
            return Err(format!(
                "internal error: `{}` has shape {:?} in the model def, but the importer expected {:?}",
                v.name, shape, v.shape
            ));
        }
        if decl.dtype != v.dtype {
            return Err(format!(
                "internal error: `{}` has element type {} in the model def, but the importer expected {}",
                v.name, decl.dtype, v.dtype
            ));
        }
    }
    Ok(())
}

/// `sizes` and the values of the symbolic dimensions of the graph inputs
/// named in `shapes`; a symbol given two values, or a fixed dimension or
/// rank that a shape contradicts, is an error naming the input.
fn bind_symbols(
    graph: &GraphProto,
    sizes: &HashMap<String, i64>,
    shapes: &HashMap<String, Vec<usize>>,
) -> Result<HashMap<String, i64>, String> {
    let symbols: std::collections::BTreeSet<&str> = graph
        .input
        .iter()
        .filter_map(|vi| vi.r#type.as_ref()?.tensor_type.as_ref()?.shape.as_ref())
        .flat_map(|s| s.dim.iter().filter_map(|d| d.dim_param.as_deref()))
        .filter(|p| !p.is_empty())
        .collect();
    let mut given: Vec<&String> = sizes.keys().collect();
    given.sort();
    if let Some(unknown) = given.into_iter().find(|s| !symbols.contains(s.as_str())) {
        let known = if symbols.is_empty() {
            "it has none".to_string()
        } else {
            let names: Vec<String> = symbols.iter().map(|s| format!("`{s}`")).collect();
            format!("its symbolic dimensions are {}", names.join(", "))
        };
        return Err(format!(
            "`--size {unknown}`: the model has no symbolic input dimension `{unknown}` ({known})"
        ));
    }
    let mut bound = sizes.clone();
    let mut from: HashMap<String, String> = HashMap::new();
    for vi in &graph.input {
        let name = vi.name.as_deref().unwrap_or("");
        let (Some(shape), Some(dims)) = (
            shapes.get(name),
            vi.r#type
                .as_ref()
                .and_then(|t| t.tensor_type.as_ref())
                .and_then(|t| t.shape.as_ref()),
        ) else {
            continue;
        };
        if shape.len() != dims.dim.len() {
            return Err(format!(
                "input `{name}` is of rank {} in the model, but the tensor given for it is {shape:?}",
                dims.dim.len()
            ));
        }
        for (k, (d, &given)) in dims.dim.iter().zip(shape).enumerate() {
            let given = given as i64;
            match (d.dim_value, d.dim_param.as_deref()) {
                (Some(v), _) if v != given => {
                    return Err(format!(
                        "input `{name}` dimension {k} is {v} in the model, but the tensor given for it is {shape:?}"
                    ))
                }
                (None, Some(p)) if !p.is_empty() => match bound.get(p) {
                    Some(&v) if v != given => {
                        let source = from
                            .get(p)
                            .map_or_else(|| "`--size`".to_string(), |n| format!("input `{n}`"));
                        return Err(format!(
                            "`{p}` is {v} from {source}, but {given} from input `{name}` (dimension {k})"
                        ));
                    }
                    Some(_) => {}
                    None => {
                        bound.insert(p.to_string(), given);
                        from.insert(p.to_string(), name.to_string());
                    }
                },
                _ => {}
            }
        }
    }
    Ok(bound)
}

/// A graph input's element type and concrete shape.
fn value_type(
    vi: &ValueInfoProto,
    sizes: &HashMap<String, i64>,
    what: &str,
) -> Result<(DType, Vec<usize>), String> {
    let name = vi.name.as_deref().unwrap_or("");
    let t = vi
        .r#type
        .as_ref()
        .and_then(|t| t.tensor_type.as_ref())
        .ok_or_else(|| format!("{what} `{name}` is not a tensor"))?;
    let code = t.elem_type.unwrap_or(0);
    let dtype = load::dtype(code).ok_or_else(|| {
        format!("{what} `{name}` has element type code {code}, which tessera does not support")
    })?;
    let dims = t
        .shape
        .as_ref()
        .ok_or_else(|| format!("{what} `{name}` has no shape"))?;
    let mut shape = Vec::new();
    for (k, d) in dims.dim.iter().enumerate() {
        let v = match (d.dim_value, d.dim_param.as_deref()) {
            (Some(v), _) => v,
            (None, Some(p)) if !p.is_empty() => *sizes.get(p).ok_or_else(|| {
                format!(
                    "{what} `{name}` dimension {k} is `{p}`: give it a value with `--size {p}=N`"
                )
            })?,
            _ => {
                return Err(format!(
                    "{what} `{name}` dimension {k} has no size: give the model a fixed input shape"
                ))
            }
        };
        // An empty dimension is taken: such an input is a known constant.
        if v < 0 {
            return Err(format!("{what} `{name}` dimension {k} is {v}"));
        }
        shape
            .push(usize::try_from(v).map_err(|_| format!("{what} `{name}` dimension {k} is {v}"))?);
    }
    Ok((dtype, shape))
}

/// A TC identifier for an ONNX name: the name itself when it is one and
/// unused, else `in{k}`.
fn tc_name(onnx: &str, k: usize, used: &mut std::collections::HashSet<String>) -> String {
    let ident = !onnx.is_empty()
        && onnx.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !onnx.chars().all(|c| c.is_ascii_digit())
        && !matches!(onnx, "def" | "where" | "in" | "exists" | "true" | "false")
        // Names the importer makes itself start with `_`.
        && !onnx.starts_with('_')
        && !PRELUDE.contains(&format!("def {onnx}("))
        && !crate::forms::FAMILIES.iter().any(|f| onnx.starts_with(f));
    let name = if ident && !used.contains(onnx) {
        onnx.to_string()
    } else {
        format!("in{k}")
    };
    used.insert(name.clone());
    name
}

/// The nodes in an order where every node follows the producers of its
/// inputs (Kahn's algorithm, stable in file order), given the graph's
/// `constants` (initializers); a cycle or an input nothing produces is an
/// error naming the node.
fn order<'g>(
    graph: &'g GraphProto,
    constants: &std::collections::HashSet<String>,
) -> Result<Vec<&'g crate::proto::NodeProto>, String> {
    let mut producer: HashMap<&str, usize> = HashMap::new();
    for (k, n) in graph.node.iter().enumerate() {
        for o in n.output.iter().filter(|o| !o.is_empty()) {
            if producer.insert(o, k).is_some() {
                return Err(format!(
                    "{}: output `{o}` is produced twice",
                    Node::new(n, k).label
                ));
            }
        }
    }
    let known: std::collections::HashSet<&str> = graph
        .input
        .iter()
        .filter_map(|v| v.name.as_deref())
        .chain(constants.iter().map(String::as_str))
        .collect();
    let mut waiting: Vec<usize> = vec![0; graph.node.len()];
    let mut users: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (k, n) in graph.node.iter().enumerate() {
        for i in n.input.iter().filter(|i| !i.is_empty()) {
            match producer.get(i.as_str()) {
                Some(&p) => {
                    waiting[k] += 1;
                    users.entry(p).or_default().push(k);
                }
                None if known.contains(i.as_str()) => {}
                None => {
                    return Err(format!(
                    "{}: input `{i}` is not a graph input, an initializer, or any node's output",
                    Node::new(n, k).label
                ))
                }
            }
        }
    }
    let mut ready: std::collections::BTreeSet<usize> =
        (0..graph.node.len()).filter(|&k| waiting[k] == 0).collect();
    let mut out = Vec::with_capacity(graph.node.len());
    while let Some(k) = ready.pop_first() {
        out.push(&graph.node[k]);
        for &u in users.get(&k).into_iter().flatten() {
            waiting[u] -= 1;
            if waiting[u] == 0 {
                ready.insert(u);
            }
        }
    }
    if out.len() < graph.node.len() {
        let stuck = (0..graph.node.len()).find(|&k| waiting[k] > 0).unwrap_or(0);
        return Err(format!(
            "{}: the graph has a cycle through this node",
            Node::new(&graph.node[stuck], stuck).label
        ));
    }
    Ok(out)
}
