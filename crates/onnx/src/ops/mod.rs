//! Operator importers: one function per ONNX operator (or family), each
//! reading the node's inputs and attributes, checking them against the
//! operator's specification, and either adding a call of the prelude def
//! that computes it or, when every input is a constant, folding it.
//!
//! An operator, attribute or attribute value outside what tessera supports
//! is an error naming the node; `build::Node::finish` catches attributes
//! an importer did not read.

mod along;
mod attention;
pub mod blocked;
mod causal_conv;
mod compare;
mod conv;
mod dft;
mod einsum;
mod elementwise;
mod flex_attention;
mod fold;
mod grid_sample;
mod layout;
mod linear;
mod linear_attention;
mod loss;
mod map;
mod normalize;
mod optimizer;
mod point;
mod pool;
mod quantize;
mod rearrange;
mod recurrent;
mod reduce;
mod resize;
mod rotary;
mod selected;
mod swap;
mod widen;
mod window;

use tensor::Tensor;

use crate::build::{Node, Value, Var};
use crate::import::Importer;

/// The operators tessera imports.
pub const SUPPORTED: &[&str] = &[
    "Abs",
    "Acos",
    "Acosh",
    "Add",
    "And",
    "ArgMax",
    "ArgMin",
    "Asin",
    "Asinh",
    "Atan",
    "Atanh",
    "Attention",
    "AveragePool",
    "BatchNormalization",
    "BitShift",
    "BitwiseAnd",
    "BitwiseNot",
    "BitwiseOr",
    "BitwiseXor",
    "BlackmanWindow",
    "Cast",
    "CastLike",
    "CausalConvWithState",
    "Ceil",
    "Celu",
    "CenterCropPad",
    "Clip",
    "Compress",
    "Concat",
    "Constant",
    "ConstantOfShape",
    "Conv",
    "ConvInteger",
    "ConvTranspose",
    "Cos",
    "Cosh",
    "CumProd",
    "CumSum",
    "DFT",
    "DepthToSpace",
    "DequantizeLinear",
    "Div",
    "Dropout",
    "DynamicQuantizeLinear",
    "Einsum",
    "Elu",
    "Equal",
    "Erf",
    "Exp",
    "Expand",
    "EyeLike",
    "Flatten",
    "Floor",
    "GRU",
    "Gather",
    "GatherElements",
    "GatherND",
    "Gelu",
    "Gemm",
    "GlobalAveragePool",
    "GlobalMaxPool",
    "Greater",
    "GreaterOrEqual",
    "GridSample",
    "GroupNormalization",
    "HammingWindow",
    "HannWindow",
    "HardSigmoid",
    "HardSwish",
    "Hardmax",
    "Identity",
    "InstanceNormalization",
    "IsInf",
    "IsNaN",
    "LRN",
    "LSTM",
    "LayerNormalization",
    "LeakyRelu",
    "Less",
    "LessOrEqual",
    "LinearAttention",
    "Log",
    "LogSoftmax",
    "LpNormalization",
    "LpPool",
    "MatMul",
    "MatMulInteger",
    "Max",
    "MaxPool",
    "Mean",
    "MeanVarianceNormalization",
    "Min",
    "Mish",
    "Mod",
    "Mul",
    "Neg",
    "NegativeLogLikelihoodLoss",
    "NonZero",
    "Not",
    "OneHot",
    "OptionalGetElement",
    "OptionalHasElement",
    "Or",
    "PRelu",
    "Pad",
    "Pow",
    "QLinearConv",
    "QLinearMatMul",
    "QuantizeLinear",
    "RMSNormalization",
    "RNN",
    "Range",
    "Reciprocal",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceMax",
    "ReduceMean",
    "ReduceMin",
    "ReduceProd",
    "ReduceSum",
    "ReduceSumSquare",
    "Relu",
    "Reshape",
    "Resize",
    "ReverseSequence",
    "RotaryEmbedding",
    "Round",
    "Scatter",
    "ScatterElements",
    "ScatterND",
    "Selu",
    "Shape",
    "Shrink",
    "Sigmoid",
    "Sign",
    "Sin",
    "Sinh",
    "Size",
    "Slice",
    "Softmax",
    "SoftmaxCrossEntropyLoss",
    "Softplus",
    "Softsign",
    "SpaceToDepth",
    "Split",
    "Sqrt",
    "Squeeze",
    "Sub",
    "Sum",
    "SwiGLU",
    "Swish",
    "Tan",
    "Tanh",
    "TensorScatter",
    "ThresholdedRelu",
    "Tile",
    "TopK",
    "Transpose",
    "Trilu",
    "Unique",
    "Unsqueeze",
    "Upsample",
    "Where",
    "Xor",
];

/// What the error says of a graph input whose value an operator needs as
/// a constant when the caller gave none (`ErrorKind::NeedsValue`).
pub(crate) const NEEDS_VALUE: &str = "whose value the import needs";

/// What the error says of a tensor the model computes whose value an
/// operator needs (`ErrorKind::NeedsComputed`).
pub(crate) const NEEDS_COMPUTED: &str =
    "computed by the model: its value, known only as the model runs, fixes the shapes of what follows";

/// The operators of other domains than the default one that are imported.
const PREVIEW: &[(&str, &str)] = &[
    ("ai.onnx.preview", "FlexAttention"),
    ("ai.onnx.preview.training", "Adagrad"),
    ("ai.onnx.preview.training", "Momentum"),
    ("ai.onnx.preview.training", "Adam"),
    ("ai.onnx.ml", "Binarizer"),
    ("ai.onnx.ml", "ArrayFeatureExtractor"),
];

/// Imports one node.
/// Why no importer handles node `n` (its domain, its operator, or its
/// operator's version in operator set `opset`), if none does.
pub fn unsupported(n: &Node, opset: i64) -> Option<String> {
    let domain = n.proto.domain.as_deref().unwrap_or("");
    // The operators of the preview domains imported.
    let preview = PREVIEW.contains(&(domain, n.op));
    if !matches!(domain, "" | "ai.onnx") && !preview {
        return Some(n.error(format!("the operator domain `{domain}` is not supported")));
    }
    if !SUPPORTED.contains(&n.op) && !preview {
        return Some(n.error(format!("operator `{}` is not supported", n.op)));
    }
    crate::versions::unimplemented(n.op, opset).map(|why| n.error(why))
}

pub fn import_node(im: &mut Importer, n: &Node) -> Result<(), String> {
    if let Some(why) = unsupported(n, im.opset) {
        return Err(why);
    }
    if !blocked::READS_BLOCKED.contains(&n.op) {
        im.plain_inputs(n);
    }
    // A matrix product reads a deferred transpose as its operand.
    if n.op != "MatMul" {
        im.unswap_inputs(n);
    }
    if widen::WIDENED.contains(&n.op) {
        if let Some(t) = widen::narrow_input(im, n) {
            return widen::import(im, n, t, import_op);
        }
    }
    import_op(im, n)
}

/// Imports one node by its operator's importer.
fn import_op(im: &mut Importer, n: &Node) -> Result<(), String> {
    match n.op {
        "Conv" => conv::conv(im, n),
        "ConvTranspose" => conv::conv_transpose(im, n),
        "LeakyRelu" | "Clip" | "Gelu" | "PRelu" => elementwise::activation(im, n),
        "LayerNormalization" => reduce::layernorm(im, n),
        "RMSNormalization" => normalize::rms(im, n),
        "InstanceNormalization" | "MeanVarianceNormalization" => normalize::instance(im, n),
        "GroupNormalization" => normalize::group(im, n),
        "NegativeLogLikelihoodLoss" | "SoftmaxCrossEntropyLoss" => loss::loss(im, n),
        "ReduceMean" | "ReduceSum" | "ReduceMax" | "ReduceMin" | "ReduceProd" | "ReduceL1"
        | "ReduceL2" | "ReduceSumSquare" | "ReduceLogSum" | "ReduceLogSumExp" => {
            reduce::reduce(im, n)
        }
        "Slice" => layout::slice(im, n),
        "Pad" => layout::pad(im, n),
        "Split" => layout::split(im, n),
        "MaxPool" | "AveragePool" | "LpPool" => conv::pool(im, n),
        "GlobalAveragePool" | "GlobalMaxPool" => conv::global_pool(im, n),
        "Relu" | "Sigmoid" | "Tanh" | "Exp" | "Log" | "Sqrt" | "Neg" | "Abs" | "Erf" => {
            elementwise::unary(im, n)
        }
        "Add" | "Sub" | "Mul" | "Div" | "Pow" | "Mod" => elementwise::binary(im, n),
        "MatMul" => linear::matmul(im, n),
        "Gemm" => linear::gemm(im, n),
        "BatchNormalization" => linear::batchnorm(im, n),
        "Softmax" => linear::softmax(im, n),
        "Tile" => rearrange::tile(im, n),
        "DequantizeLinear" => quantize::dequantize(im, n),
        "QuantizeLinear" => quantize::quantize(im, n),
        "DynamicQuantizeLinear" => quantize::dynamic_quantize(im, n),
        "MatMulInteger" => quantize::matmul_integer(im, n),
        "ConvInteger" => quantize::conv_integer(im, n),
        "QLinearConv" => quantize::qlinear_conv(im, n),
        "QLinearMatMul" => quantize::qlinear_matmul(im, n),
        "Resize" | "Upsample" => resize::resize(im, n),
        "GridSample" => grid_sample::grid_sample(im, n),
        "Attention" => attention::attention(im, n),
        "RotaryEmbedding" => rotary::rotary(im, n),
        "RNN" | "GRU" | "LSTM" => recurrent::recurrent(im, n),
        "Trilu" => rearrange::trilu(im, n),
        "GatherElements" => rearrange::gather_elements(im, n),
        // Scatter (sets 9 and 10) is ScatterElements before it was renamed.
        "ScatterElements" | "Scatter" => rearrange::scatter_elements(im, n),
        "DepthToSpace" | "SpaceToDepth" => rearrange::depth_space(im, n),
        "GatherND" => rearrange::gather_nd(im, n),
        "ScatterND" => rearrange::scatter_nd(im, n),
        "OneHot" => rearrange::one_hot(im, n),
        "EyeLike" => rearrange::eye_like(im, n),
        "LogSoftmax" | "Hardmax" => along::softmax(im, n),
        "ArgMax" | "ArgMin" => along::arg(im, n),
        "TopK" => along::top_k(im, n),
        "CumSum" | "CumProd" => along::cumsum(im, n),
        "LpNormalization" => along::lp_normalization(im, n),
        "Flatten" => layout::flatten(im, n),
        "Reshape" => layout::reshape(im, n),
        "Transpose" => layout::transpose(im, n),
        "Concat" => layout::concat(im, n),
        "Squeeze" | "Unsqueeze" => layout::squeeze(im, n),
        "Constant" => fold::constant(im, n),
        "Identity" | "Dropout" => fold::identity(im, n),
        "Shape" => fold::shape(im, n),
        "Size" => fold::size(im, n),
        "Gather" => fold::gather(im, n),
        "Cast" => fold::cast(im, n),
        "CastLike" => fold::cast_like(im, n),
        "ConstantOfShape" => fold::constant_of_shape(im, n),
        "Range" => fold::range(im, n),
        "Einsum" => linear::einsum(im, n),
        "Where" => elementwise::select(im, n),
        "Equal" | "Less" | "Greater" | "LessOrEqual" | "GreaterOrEqual" | "And" | "Or" => {
            compare::binary(im, n)
        }
        "Not" => compare::not(im, n),
        "Expand" => elementwise::expand(im, n),
        "Max" | "Min" | "Sum" | "Mean" => map::variadic(im, n),
        "Xor" | "BitShift" | "SwiGLU" => map::binary(im, n),
        "HannWindow" | "HammingWindow" | "BlackmanWindow" => window::window(im, n),
        "LRN" => normalize::lrn(im, n),
        "NonZero" => selected::nonzero(im, n),
        "Compress" => selected::compress(im, n),
        "Unique" => selected::unique(im, n),
        "DFT" => dft::dft(im, n),
        "CausalConvWithState" => causal_conv::causal_conv(im, n),
        "LinearAttention" => linear_attention::linear_attention(im, n),
        "FlexAttention" => flex_attention::flex_attention(im, n),
        "Adagrad" | "Momentum" | "Adam" => optimizer::optimizer(im, n),
        "OptionalHasElement" | "OptionalGetElement" => fold::optional(im, n),
        "ReverseSequence" => rearrange::reverse_sequence(im, n),
        "CenterCropPad" => rearrange::center_crop_pad(im, n),
        "TensorScatter" => rearrange::tensor_scatter(im, n),
        "Binarizer" => map::unary(im, n),
        "ArrayFeatureExtractor" => rearrange::feature_extractor(im, n),
        "BitwiseAnd" | "BitwiseOr" | "BitwiseXor" | "BitwiseNot" => map::bitwise(im, n),
        "Reciprocal" | "Sin" | "Cos" | "Tan" | "Asin" | "Acos" | "Atan" | "Sinh" | "Cosh"
        | "Asinh" | "Acosh" | "Atanh" | "Floor" | "Ceil" | "Round" | "Sign" | "Elu" | "Selu"
        | "Celu" | "HardSigmoid" | "HardSwish" | "Softplus" | "Softsign" | "Mish"
        | "ThresholdedRelu" | "IsNaN" | "IsInf" | "Swish" | "Shrink" => map::unary(im, n),
        other => Err(n.error(format!("operator `{other}` is not supported"))),
    }
}

impl Importer<'_> {
    /// The version of `n`'s operator schema that the node follows in the
    /// model's operator set (`crate::versions`).
    pub(crate) fn version(&self, n: &Node) -> i64 {
        crate::versions::version(n.op, self.opset).unwrap_or(self.opset)
    }

    /// Input `k` of `n`, which must be present.
    pub(crate) fn value(&self, n: &Node, k: usize) -> Result<Value, String> {
        let name = n
            .input(k)
            .ok_or_else(|| n.error(format!("input {} is missing", k + 1)))?;
        self.values
            .get(name)
            .cloned()
            .ok_or_else(|| n.error(format!("input `{name}` has no value")))
    }

    /// Input `k` as a tensor of the model def (a constant becomes a
    /// parameter).
    pub(crate) fn var(&mut self, n: &Node, k: usize) -> Result<Var, String> {
        let v = self.value(n, k)?;
        Ok(self.as_var(n, k, v))
    }

    /// Optional input `k` as a tensor of the model def, `None` when absent.
    pub(crate) fn optional_var(&mut self, n: &Node, k: usize) -> Result<Option<Var>, String> {
        match n.input(k) {
            Some(_) => self.var(n, k).map(Some),
            None => Ok(None),
        }
    }

    /// `v`, the value of input `k` of `n`, as a tensor of the model def.
    pub(crate) fn as_var(&mut self, n: &Node, k: usize, v: Value) -> Var {
        match v {
            Value::Var(v) => v,
            Value::Const(t) => self.b.weight(n.input(k).unwrap_or_default(), &t),
        }
    }

    /// Input `k`, which must be a constant (known at import): an
    /// initializer, a value the import folded, a graph input whose value
    /// the caller gave, or a tensor the model computes whose value the
    /// caller gave (having run the model up to it); the import is then
    /// specialized on that value. A computed tensor whose value was not
    /// given is noted in [`Importer::needs`].
    pub(crate) fn constant(&self, n: &Node, k: usize, what: &str) -> Result<Tensor, String> {
        match self.value(n, k)? {
            Value::Const(t) => Ok(t),
            Value::Var(v) => match self.given.get(&v.name) {
                Some((onnx, Some(t))) => {
                    self.specialized.borrow_mut().insert(onnx.clone());
                    Ok(t.clone())
                }
                Some((onnx, None)) => Err(n.error(format!(
                    "input {} ({what}) is the graph input `{onnx}`, {NEEDS_VALUE}: give it (`tessera run --input`)",
                    k + 1
                ))),
                None => {
                    let name = n.input(k).unwrap_or_default();
                    if let Some(t) = self.computed.get(name) {
                        self.computed_read.borrow_mut().insert(name.to_string());
                        return Ok(t.clone());
                    }
                    self.needs.borrow_mut().insert(name.to_string());
                    Err(n.error(format!(
                        "input {} ({what}) is `{name}`, {NEEDS_COMPUTED}",
                        k + 1
                    )))
                }
            },
        }
    }

    /// The outputs `compute` makes of input `k` of `n` (`what` it is, for
    /// messages), whose values fix their shapes: constants when the input
    /// is one ([`Importer::constant`]); for a tensor the model computes,
    /// whose value the caller gave, weights of the model def held by a
    /// runtime step ([`crate::Step`]), so that the program depends on
    /// their shapes only.
    pub(crate) fn step(
        &mut self,
        n: &Node,
        k: usize,
        what: &str,
        compute: crate::Compute,
    ) -> Result<Vec<Value>, String> {
        let name = n.input(k).unwrap_or_default().to_string();
        let computed = match self.value(n, k)? {
            Value::Var(v) => !self.given.contains_key(&v.name),
            Value::Const(_) => false,
        };
        let Some(t) = self.computed.get(&name).filter(|_| computed) else {
            let t = self.constant(n, k, what)?;
            return Ok(compute(&t)?.into_iter().map(Value::Const).collect());
        };
        let outputs = compute(t)?;
        let mut weights = Vec::new();
        let mut values = Vec::new();
        for o in &outputs {
            let key = self.b.fresh("step");
            let v = self.b.weight(&key, o);
            weights.push(v.name.clone());
            values.push(Value::Var(v));
        }
        self.steps.push(crate::Step {
            input: name,
            weights,
            compute,
        });
        Ok(values)
    }

    /// Binds output `k` of `n`.
    pub(crate) fn set(&mut self, n: &Node, k: usize, v: Value) {
        if let Some(name) = n.proto.output.get(k).filter(|s| !s.is_empty()) {
            self.values.insert(name.clone(), v);
        }
    }

    /// Fails when the node asks for more outputs than the importer gives.
    pub(crate) fn outputs(&self, n: &Node, most: usize) -> Result<(), String> {
        if n.outputs() > most {
            return Err(n.error(format!(
                "output {} is not supported (tessera computes the first {most})",
                most + 1
            )));
        }
        Ok(())
    }
}

/// A normalized axis (`-1` is the last) of a rank-`rank` tensor.
pub(crate) fn axis(n: &Node, a: i64, rank: usize) -> Result<usize, String> {
    let r = rank as i64;
    if a < -r || a >= r {
        return Err(n.error(format!("axis {a} is out of range for rank {rank}")));
    }
    Ok(if a < 0 { (a + r) as usize } else { a as usize })
}

/// The values of an integer constant (shapes, axes, pads).
pub(crate) fn ints(t: &Tensor) -> Vec<i64> {
    t.values()
        .into_iter()
        .map(|v| match v {
            ir::Value::Int(i) => i,
            ir::Value::Float(x) => x as i64,
            ir::Value::Bool(b) => i64::from(b),
        })
        .collect()
}

/// The highest rank of the prelude's rank families (`_rK` defs).
pub(crate) const MAX_RANK: usize = 5;

/// The rank suffix of a prelude def, for ranks the prelude covers (1 to
/// `MAX_RANK`).
pub(crate) fn rank(n: &Node, shape: &[usize], what: &str) -> Result<usize, String> {
    match shape.len() {
        r @ 1..=MAX_RANK => Ok(r),
        r => Err(n.error(format!(
            "{what} of rank {r} is not supported (ranks 1 to {MAX_RANK} are)"
        ))),
    }
}
