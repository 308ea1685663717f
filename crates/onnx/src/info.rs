//! What `tessera info` prints about a model: its inputs and outputs, an
//! operator histogram, the operators tessera has no importer for, and
//! whether the model imports: the import itself runs, so every node `run`
//! would refuse is reported with `run`'s message.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::path::Path;

use crate::load;

/// A summary of a model, and what its import found wrong.
#[derive(Debug)]
pub struct Info {
    pub opset: i64,
    pub producer: String,
    /// Inputs that are not initializers, and outputs: name, type, shape
    /// (symbolic dimensions by name).
    pub inputs: Vec<(String, String, Option<Vec<String>>)>,
    pub outputs: Vec<(String, String, Option<Vec<String>>)>,
    /// Initializers and their total number of elements.
    pub initializers: (usize, usize),
    /// Operator type to node count.
    pub ops: BTreeMap<String, usize>,
    /// Operator types no importer handles.
    pub unsupported: Vec<String>,
    /// Every reason the import fails (`import::problems`): none when the
    /// model imports.
    pub problems: Vec<String>,
}

/// The summary of the model at `path`, imported with `sizes` binding its
/// symbolic input dimensions.
pub fn info(path: &Path, sizes: &HashMap<String, i64>) -> Result<Info, String> {
    let loaded = load(path)?;
    let m = &loaded.model;
    let g = m.graph.as_ref().ok_or("the model has no graph")?;
    let port = |d: crate::Declared| {
        let dtype = d.dtype.map_or("?", |t| t.name()).to_string();
        let dims = d
            .dims
            .map(|dims| dims.iter().map(ToString::to_string).collect());
        (d.name, dtype, dims)
    };
    let mut ops = BTreeMap::new();
    for n in &g.node {
        *ops.entry(n.op_type.clone().unwrap_or_default())
            .or_insert(0) += 1;
    }
    let unsupported = ops
        .keys()
        .filter(|op| !crate::SUPPORTED.contains(&op.as_str()))
        .cloned()
        .collect();
    let signature = crate::signature(&loaded);
    let inputs = signature.inputs.into_iter().map(port).collect();
    let outputs = signature.outputs.into_iter().map(port).collect();
    let initializers = (g.initializer.len(), initializer_values(g)?);
    let (opset, producer) = (loaded.opset, m.producer_name.clone().unwrap_or_default());
    Ok(Info {
        opset,
        producer,
        inputs,
        outputs,
        initializers,
        ops,
        unsupported,
        problems: crate::import::problems(loaded, sizes),
    })
}

/// The elements of all initializers, counted exactly: a negative dimension
/// or a count past 2^64 is an error naming the initializer, not a wrong
/// number.
fn initializer_values(g: &crate::proto::GraphProto) -> Result<usize, String> {
    let mut total = 0usize;
    for t in &g.initializer {
        let name = t.name.as_deref().unwrap_or("");
        let mut n = 1usize;
        for &d in &t.dims {
            let d = usize::try_from(d)
                .map_err(|_| format!("initializer `{name}` has a negative dimension {d}"))?;
            n = n.checked_mul(d).ok_or_else(|| {
                format!(
                    "initializer `{name}` has more than 2^64 elements: {:?}",
                    t.dims
                )
            })?;
        }
        total = total
            .checked_add(n)
            .ok_or("the initializers have more than 2^64 elements together")?;
    }
    Ok(total)
}

/// The summary as `tessera info` prints it.
pub fn print_info(i: &Info) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "opset {}{}",
        i.opset,
        if i.producer.is_empty() {
            String::new()
        } else {
            format!(", produced by {}", i.producer)
        }
    );
    for (title, ports) in [("inputs", &i.inputs), ("outputs", &i.outputs)] {
        let _ = writeln!(s, "{title}:");
        for (name, dtype, dims) in ports {
            match dims {
                Some(d) => writeln!(s, "  {name}: {dtype}[{}]", d.join(", ")),
                None => writeln!(s, "  {name}: {dtype}, shape not given"),
            }
            .unwrap_or(());
        }
    }
    let _ = writeln!(
        s,
        "initializers: {} ({} values)",
        i.initializers.0, i.initializers.1
    );
    let _ = writeln!(s, "operators ({} nodes):", i.ops.values().sum::<usize>());
    for (op, count) in &i.ops {
        let _ = writeln!(s, "  {op:<24} {count}");
    }
    if !i.unsupported.is_empty() {
        let _ = writeln!(s, "unsupported operators: {}", i.unsupported.join(", "));
    }
    match i.problems.as_slice() {
        [] => {
            let _ = writeln!(s, "the model imports: tessera supports every node");
        }
        [p] => {
            let _ = writeln!(s, "tessera cannot import the model:\n  {p}");
        }
        ps => {
            let _ = writeln!(
                s,
                "tessera cannot import the model ({} problems):",
                ps.len()
            );
            for p in ps {
                let _ = writeln!(s, "  {p}");
            }
        }
    }
    s
}
