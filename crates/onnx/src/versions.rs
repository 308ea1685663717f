//! Operator versions. An ONNX model imports a default operator set, and
//! each of its nodes follows the newest version of its operator's schema
//! not newer than that set (ONNX's since-versions: Slice has versions 1,
//! 10, 11 and 13, so a model of operator set 12 has Slice 11). The table
//! of versions (`since.rs`) is generated from the pinned `onnx` package
//! (`tests/onnx/versions.py`), so that it cannot drift from the schemas.
//!
//! The importers were written for operator sets 11 to 21, and every
//! version an operator has from set 11 on up to the newest set differs
//! from the one before only in element types the importers check one by
//! one (bfloat16, the float8, float4, int4 and int2 types) or in
//! attributes they do not read, which `Node::finish` refuses by name (a
//! Cast's `round_mode`, a Range's `stash_type`). An operator's version at
//! set 11 is therefore the oldest each importer implements, but for the
//! older versions [`FROM`] lists; an older one (a Slice 1 with its bounds
//! as attributes, in a model of set 9) is refused, naming the operator,
//! its version and the set.

mod since;

pub use since::{NEWEST, SINCE};

/// The oldest default operator set whose models tessera reads.
pub const OLDEST: i64 = 1;

/// The operator set whose operators' versions the importers implement
/// and every version after them.
const BASE: i64 = 11;

/// Operators whose importer implements versions older than the one at
/// [`BASE`], and the oldest: versions whose schemas (attributes, inputs,
/// outputs and text) equal the one at set 11 but for element types and
/// negative axes (AveragePool 1, Concat 4, Conv 1, ConvTranspose 1,
/// Flatten 1, Gather 1, MatMul 1, MaxPool 1, the reductions 1, Softmax 1,
/// Split 2, Squeeze 1, Unsqueeze 1), or differ from it only in what the
/// later version adds and the importer reads when present (Constant 11's
/// `sparse_value`, Gemm 11's optional C, Cast 9's strings), or whose
/// older form the importer reads by the node's version: the arithmetic
/// and comparisons of sets 1 to 6 with their `broadcast` and `axis`
/// attributes instead of numpy broadcasting, BatchNormalization 6 and
/// Dropout 6 with `is_test`, Clip 6 with its bounds as attributes, Pad 2
/// and Slice 1 with theirs. Max, Min, Sum and Mean 6 take operands of one
/// shape, which the later versions' broadcasting reads the same. The
/// operators added later (ArgMax, Resize, TopK, ...) list theirs likewise.
const FROM: &[(&str, i64)] = &[
    ("Add", 6),
    ("And", 1),
    ("ArgMax", 1),
    ("ArgMin", 1),
    ("AveragePool", 1),
    ("BatchNormalization", 6),
    ("Cast", 6),
    ("Clip", 6),
    ("Concat", 4),
    ("Constant", 1),
    ("Conv", 1),
    ("ConvTranspose", 1),
    ("DepthToSpace", 1),
    ("Div", 6),
    ("Dropout", 6),
    ("Equal", 1),
    ("Flatten", 1),
    ("Gather", 1),
    ("Gemm", 6),
    ("Greater", 1),
    ("Hardmax", 1),
    ("Less", 1),
    ("LogSoftmax", 1),
    ("LpNormalization", 1),
    ("MatMul", 1),
    ("Max", 6),
    ("MaxPool", 1),
    ("Mean", 6),
    ("Min", 6),
    ("Mul", 6),
    ("OneHot", 9),
    ("Or", 1),
    ("PRelu", 6),
    ("Pad", 2),
    ("Pow", 1),
    ("ReduceL1", 1),
    ("ReduceL2", 1),
    ("ReduceLogSum", 1),
    ("ReduceLogSumExp", 1),
    ("ReduceMax", 1),
    ("ReduceMean", 1),
    ("ReduceMin", 1),
    ("ReduceProd", 1),
    ("ReduceSum", 1),
    ("ReduceSumSquare", 1),
    ("Scatter", 9),
    ("Slice", 1),
    ("Softmax", 1),
    ("SpaceToDepth", 1),
    ("Split", 2),
    ("Squeeze", 1),
    ("Sub", 6),
    ("Sum", 6),
    ("Tile", 6),
    ("TopK", 10),
    ("Unsqueeze", 1),
    ("Upsample", 7),
];

/// The version of `op`'s schema a node of a model of operator set
/// `opset` follows; `None` when `op` has no version that old (or is not
/// in the table).
pub fn version(op: &str, opset: i64) -> Option<i64> {
    let (_, versions) = SINCE.iter().find(|(o, _)| *o == op)?;
    versions.iter().copied().filter(|&v| v <= opset).max()
}

/// The oldest version of `op` the importer implements (`None` for an
/// operator not in the table).
fn oldest(op: &str) -> Option<i64> {
    let (_, versions) = SINCE.iter().find(|(o, _)| *o == op)?;
    FROM.iter()
        .find(|(o, _)| *o == op)
        .map(|(_, v)| *v)
        .or_else(|| version(op, BASE))
        .or(versions.first().copied())
}

/// The versions of `op`'s schema the importer implements, oldest first:
/// those a node of a model of operator set [`OLDEST`] to [`NEWEST`] may
/// follow, from [`oldest`] on.
pub fn implemented(op: &str) -> Vec<i64> {
    let Some((_, versions)) = SINCE.iter().find(|(o, _)| *o == op) else {
        return Vec::new();
    };
    let from = oldest(op)
        .unwrap_or(i64::MAX)
        .max(version(op, OLDEST).unwrap_or(0));
    versions.iter().copied().filter(|&v| v >= from).collect()
}

/// Why a node of operator `op`, in a model of operator set `opset`, is
/// not imported, if its version is one the importer does not implement.
pub fn unimplemented(op: &str, opset: i64) -> Option<String> {
    let (_, versions) = SINCE.iter().find(|(o, _)| *o == op)?;
    let Some(v) = version(op, opset) else {
        return Some(format!(
            "`{op}` is not defined in operator set {opset} (its first version is {})",
            versions[0]
        ));
    };
    let oldest = oldest(op).unwrap_or(versions[0]);
    (v < oldest).then(|| {
        format!(
            "operator set {opset} gives `{op}` version {v}, which tessera does not implement (it implements `{op}` from version {oldest}, operator set {oldest} on)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_follows_the_newest_version_not_newer_than_its_set() {
        assert_eq!(version("Slice", 9), Some(1));
        assert_eq!(version("Slice", 12), Some(11));
        assert_eq!(version("Conv", NEWEST), Some(22));
        assert_eq!(version("Gelu", 19), None);
        assert_eq!(version("NoSuchOp", 13), None);
    }

    #[test]
    fn versions_older_than_the_importers_are_refused_by_name() {
        // Relu 6 is Relu at set 11 too; Conv 22 adds only bfloat16; Slice
        // 1 (bounds as attributes) is read by the node's version.
        assert_eq!(unimplemented("Relu", 6), None);
        assert_eq!(unimplemented("Conv", NEWEST), None);
        assert_eq!(unimplemented("Slice", 9), None);
        // Add 1 has `consumed_inputs`, which Add 6 dropped.
        assert_eq!(
            unimplemented("Add", 5).as_deref(),
            Some("operator set 5 gives `Add` version 1, which tessera does not implement (it implements `Add` from version 6, operator set 6 on)")
        );
        // Resize 10 rounds its nearest mode otherwise than Resize 11.
        assert_eq!(
            unimplemented("Resize", 10).as_deref(),
            Some("operator set 10 gives `Resize` version 10, which tessera does not implement (it implements `Resize` from version 11, operator set 11 on)")
        );
        assert_eq!(
            unimplemented("Gelu", 19).as_deref(),
            Some("`Gelu` is not defined in operator set 19 (its first version is 20)")
        );
    }

    #[test]
    fn every_supported_operator_has_its_versions() {
        for op in crate::SUPPORTED {
            assert!(
                SINCE.iter().any(|(o, v)| o == op && !v.is_empty()),
                "`{op}` is not in the versions table: run tests/onnx/versions.py"
            );
        }
    }
}
