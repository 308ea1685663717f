//! The part of a model that computes some of its tensors: the same graph
//! inputs and initializers, the nodes those tensors depend on, and those
//! tensors as the graph's outputs.
//!
//! A caller whose import needs the value of a tensor the model computes
//! (`ErrorKind::NeedsComputed`: the data of `NonZero`, a bound of `Range`
//! computed from an input) runs this part on the model's inputs, then
//! imports the whole model with that value, as a runtime step whose
//! results fix the shapes of what follows.
//!
//! Guarantees: the cut model keeps every graph input (so it takes the same
//! feed) and every node's order; it has no node the wanted tensors do not
//! depend on.

use std::collections::HashSet;

use crate::load::Loaded;
use crate::proto::ValueInfoProto;
use crate::Error;

/// Cuts `loaded` down to the nodes that compute the tensors `wanted` (by
/// ONNX name), which become its outputs. An error names a wanted tensor
/// that no node, input or initializer of the graph gives.
pub fn cut(loaded: &mut Loaded, wanted: &[String]) -> Result<(), Error> {
    let Some(graph) = loaded.model.graph.as_mut() else {
        return Err(Error::invalid("the model has no graph"));
    };
    let given: HashSet<&str> = graph
        .input
        .iter()
        .filter_map(|i| i.name.as_deref())
        .chain(graph.initializer.iter().filter_map(|t| t.name.as_deref()))
        .chain(
            graph
                .node
                .iter()
                .flat_map(|n| n.output.iter().map(String::as_str)),
        )
        .collect();
    if let Some(missing) = wanted.iter().find(|w| !given.contains(w.as_str())) {
        return Err(Error::invalid(format!(
            "the model computes no tensor `{missing}`"
        )));
    }
    // The nodes are not necessarily in order in the file: the tensors
    // needed grow until no node adds one.
    let mut needed: HashSet<String> = wanted.iter().cloned().collect();
    let mut keep = vec![false; graph.node.len()];
    let mut grew = true;
    while grew {
        grew = false;
        for (k, node) in graph.node.iter().enumerate() {
            if !keep[k] && node.output.iter().any(|o| needed.contains(o)) {
                keep[k] = true;
                grew = true;
                needed.extend(node.input.iter().filter(|i| !i.is_empty()).cloned());
            }
        }
    }
    let mut k = 0;
    graph.node.retain(|_| {
        k += 1;
        keep[k - 1]
    });
    graph.output = wanted
        .iter()
        .map(|w| ValueInfoProto {
            name: Some(w.clone()),
            ..Default::default()
        })
        .collect();
    Ok(())
}
