//! Channel-blocked layouts (the prelude's NCHW[c] section): 2-D
//! convolutions with constant weights run blocked, and chains of the
//! operators that keep the layout stay blocked.
//!
//! A convolution of one group with constant float32 weights and bias is
//! imported as `conv2d_nchwc` on a blocked input (`conv2d_nchw_nchwc` when
//! its input is plain and its channels are not a whole number of blocks:
//! a network's first layer), and one whose groups are one block each as
//! `conv2d_nchwc_grouped`, its weights and bias packed here, once, into
//! the kernel's layout. Its result is kept blocked: ReLU, an `Add` of two
//! blocked tensors of one shape and a 2-D `MaxPool` of a blocked tensor
//! give blocked results too. Any other reader of a blocked value gets it
//! plain (`nchw`), made once, at the first such reader
//! ([`Importer::plain`]); so layouts change only at the boundaries of
//! blocked chains. Each rewrite is proved by `tessera verify` on a TC pair
//! in `tests/files/verify/` (channels that are not a multiple of the block
//! included).
//!
//! Requires: the blocked value's channels fit its blocks. Guarantees: the
//! plain form of every blocked value equals what the plain operators
//! compute, up to float reassociation: a blocked convolution sums the same
//! products in the same order of input channels, but starts from the bias
//! instead of adding it last.

use std::time::Instant;

use ir::DType;
use tensor::Tensor;

use super::conv::Window;
use crate::build::{int, Node, Value, Var};
use crate::import::Importer;

/// The channels of one block: the float32 lanes of an AVX-512 register.
pub const BLOCK: usize = 16;

/// A value held channel-blocked: N x CB x H x W x BLOCK, of `channels`
/// real channels, with the statement that computes it.
#[derive(Clone, Debug)]
pub struct Blocked {
    pub var: Var,
    pub channels: usize,
    /// The statement computing it (its index in the def), if any.
    pub stmt: Option<usize>,
    /// The convolution call computing it, while an epilogue may still be
    /// added to that call.
    pub conv: Option<ConvCall>,
}

/// A blocked convolution's call, as the epilogue fusion rewrites it.
#[derive(Clone, Debug)]
pub struct ConvCall {
    /// The def called: `conv2d_nchwc`, `conv2d_nchw_nchwc` or a variant
    /// with an epilogue (`_relu`, `_add`, `_add_relu`).
    pub def: String,
    pub tensors: Vec<String>,
    pub scalars: Vec<String>,
}

impl ConvCall {
    /// Rewrites statement `stmt` of the def as this call computing `var`.
    fn write(&self, im: &mut Importer, stmt: usize, var: &Var) {
        let args: Vec<&str> = self
            .tensors
            .iter()
            .chain(&self.scalars)
            .map(String::as_str)
            .collect();
        im.b.stmts[stmt] = format!("{} = {}({})", var.name, self.def, args.join(", "));
    }
}

/// The operators that read blocked values themselves; every other one
/// reads its inputs plain.
pub const READS_BLOCKED: &[&str] = &[
    "Conv",
    "Relu",
    "Add",
    "MaxPool",
    "BatchNormalization",
    "Concat",
];

impl Importer<'_> {
    /// Input `k` of `n` in blocked form, if it is held so.
    pub(crate) fn blocked(&self, n: &Node, k: usize) -> Option<Blocked> {
        self.blocked.get(n.input(k)?).cloned()
    }

    /// The plain shape (N x C x H x W) of input `k` of `n`, whether it is
    /// held plain or blocked.
    pub(crate) fn plain_shape(&self, n: &Node, k: usize) -> Result<Vec<usize>, String> {
        Ok(match self.blocked(n, k) {
            Some(b) => {
                let s = &b.var.shape;
                vec![s[0], b.channels, s[2], s[3]]
            }
            None => self.value(n, k)?.shape().to_vec(),
        })
    }

    /// Makes every blocked input of `n` available plain (`nchw`, once).
    pub(crate) fn plain_inputs(&mut self, n: &Node) {
        for name in n.proto.input.iter() {
            self.plain(name);
        }
    }

    /// Makes value `name` available plain if it is held only blocked.
    pub(crate) fn plain(&mut self, name: &str) {
        if self.values.contains_key(name) {
            return;
        }
        let Some(b) = self.blocked.get(name).cloned() else {
            return;
        };
        let y = self.unblocked(&b);
        self.values.insert(name.to_string(), Value::Var(y));
    }

    /// The first channels of blocked `b`, plain (`nchw`).
    pub(crate) fn unblocked(&mut self, b: &Blocked) -> Var {
        let s = &b.var.shape;
        let shape = vec![s[0], b.channels, s[2], s[3]];
        let channels = [int(b.channels as i64)];
        self.b.call("nchw", &[&b.var], &channels, DType::F32, shape)
    }

    /// Plain N x C x H x W value `name` (`x`) as a convolution reads it:
    /// in channel blocks when C is whole blocks, made once and kept as the
    /// value's blocked form for its other blocked readers; else plain.
    /// Reading a plain input in place costs more than reordering it first
    /// (measured: 8.8 ms against 2.0 + 3.8 ms for the benchmark's grouped
    /// convolution).
    fn block_once(&mut self, name: &str, x: Var) -> Input {
        if x.shape.len() != 4 || !x.shape[1].is_multiple_of(BLOCK) {
            return Input::Plain(x);
        }
        let y = blocked_input(self, &x);
        let b = Blocked {
            var: y.clone(),
            channels: x.shape[1],
            stmt: Some(self.b.stmts.len() - 1),
            conv: None,
        };
        self.blocked.insert(name.to_string(), b);
        Input::Blocked(y)
    }

    /// Binds output `k` of `n` to a blocked value.
    fn set_blocked(&mut self, n: &Node, k: usize, b: Blocked) {
        if let Some(name) = n.proto.output.get(k).filter(|s| !s.is_empty()) {
            self.blocked.insert(name.clone(), b);
        }
    }
}

/// Blocks of `c` channels.
fn blocks(c: usize) -> usize {
    c.div_ceil(BLOCK)
}

/// A 2-D convolution of one group (or of groups of one block each) with
/// constant float32 weights and bias, imported blocked; false (nothing
/// done) when it is not one.
pub(crate) fn conv(
    im: &mut Importer,
    n: &Node,
    weight: &Tensor,
    bias: Option<&Tensor>,
    group: i64,
    win: &Window,
) -> Result<bool, String> {
    let ws = weight.shape();
    // Groups of exactly one block each (16 channels in and out) run
    // blocked too: group g reads block g.
    let one_block_groups = ws.len() == 4 && ws[0] == BLOCK * group as usize && ws[1] == BLOCK;
    if (group != 1 && !one_block_groups) || ws.len() != 4 || weight.dtype() != DType::F32 {
        return Ok(false);
    }
    if bias.is_some_and(|b| b.dtype() != DType::F32) {
        return Ok(false);
    }
    let input = match im.blocked(n, 0) {
        Some(b) => Input::Blocked(b.var),
        None => {
            let x = im.var(n, 0)?;
            let name = n.input(0).unwrap_or_default();
            im.block_once(name, x)
        }
    };
    let key = n.input(1).unwrap_or_default();
    let bias = bias.map(|b| (b, n.input(2).unwrap_or_default()));
    let y = if group == 1 {
        conv_packed(im, input, weight, key, bias, win)?
    } else {
        // Groups of one block each make the input's channels whole
        // blocks, which `block_once` put in blocks.
        let Input::Blocked(input) = input else {
            return Ok(false);
        };
        let f = ws[0];
        let key = format!("{key}#nchwc_grouped");
        let weights = Packed::timed(key, f, || pack_grouped(weight))?;
        call_packed(im, "conv2d_nchwc_grouped", &input, weights, bias, win)?.0
    };
    im.set_blocked(n, 0, y);
    Ok(true)
}

/// A convolution's input: held blocked, or plain.
#[derive(Clone)]
pub(crate) enum Input {
    Blocked(Var),
    Plain(Var),
}

/// The blocked convolution of `input` by constant float32 F x C x KH x KW
/// `weight` (ONNX name `key`) and `bias` (with its ONNX name), through
/// `win`: the statement, its packed weights made parameters once.
pub(crate) fn conv_packed(
    im: &mut Importer,
    input: Input,
    weight: &Tensor,
    key: &str,
    bias: Option<(&Tensor, &str)>,
    win: &Window,
) -> Result<Blocked, String> {
    let ws = weight.shape();
    let (f, c) = (ws[0], ws[1]);
    // A plain input whose channels are not whole blocks is read as it is
    // (padding 3 channels to 16 would do 5 times the work).
    let (input, plain_in) = match input {
        Input::Blocked(v) => (v, false),
        Input::Plain(x) if c % BLOCK != 0 => (x, true),
        Input::Plain(x) => (blocked_input(im, &x), false),
    };
    let (key, def) = if plain_in {
        (format!("{key}#nchw_nchwc"), "conv2d_nchw_nchwc")
    } else {
        (format!("{key}#nchwc"), "conv2d_nchwc")
    };
    let weights = Packed::timed(key, f, || pack_weights(weight, plain_in))?;
    let (mut y, call) = call_packed(im, def, &input, weights, bias, win)?;
    y.conv = Some(call);
    Ok(y)
}

/// Weights packed into a kernel's layout: the tensor, the output channels
/// it holds (the rest of its blocks is zeros), the time packing took, and
/// its key among the model's weights.
struct Packed {
    tensor: Tensor,
    channels: usize,
    seconds: f64,
    key: String,
}

impl Packed {
    /// The weights `pack` makes, timed.
    fn timed(
        key: String,
        channels: usize,
        pack: impl FnOnce() -> Result<Tensor, String>,
    ) -> Result<Packed, String> {
        let started = Instant::now();
        let tensor = pack()?;
        let seconds = started.elapsed().as_secs_f64();
        Ok(Packed {
            tensor,
            channels,
            seconds,
            key,
        })
    }
}

/// The call of blocked convolution `def` on `input` by `weights` and
/// `bias` (packed here), through `win`: its result and the call, which an
/// epilogue may rewrite.
fn call_packed(
    im: &mut Importer,
    def: &str,
    input: &Var,
    weights: Packed,
    bias: Option<(&Tensor, &str)>,
    win: &Window,
) -> Result<(Blocked, ConvCall), String> {
    let f = weights.channels;
    im.b.packing.add(&weights.tensor, weights.seconds);
    let wt = im.b.weight(&weights.key, &weights.tensor);
    let bias_key = match bias {
        Some((_, name)) => format!("{name}#nchwc"),
        None => format!("#zeros{}", blocks(f)),
    };
    let bt = im.b.weight(&bias_key, &pack_bias(bias.map(|b| b.0), f)?);
    let scalars: Vec<String> = [&win.strides, &win.pads, &win.dilations]
        .into_iter()
        .flatten()
        .map(|&x| int(x))
        .collect();
    let shape = vec![input.shape[0], blocks(f), win.out[0], win.out[1], BLOCK];
    let y =
        im.b.call(def, &[input, &wt, &bt], &scalars, DType::F32, shape);
    let call = ConvCall {
        def: def.to_string(),
        tensors: vec![input.name.clone(), wt.name.clone(), bt.name.clone()],
        scalars,
    };
    let blocked = Blocked {
        var: y,
        channels: f,
        stmt: Some(im.b.stmts.len() - 1),
        conv: None,
    };
    Ok((blocked, call))
}

/// Plain `x` as the input of several blocked convolutions: in channel
/// blocks, made once, when its channels are whole blocks; else plain, as
/// [`conv_packed`] reads such an input.
pub(crate) fn shared_input(im: &mut Importer, x: &Var) -> Input {
    if x.shape[1].is_multiple_of(BLOCK) {
        Input::Blocked(blocked_input(im, x))
    } else {
        Input::Plain(x.clone())
    }
}

/// Plain N x C x H x W `x` in channel blocks (`nchwc`).
fn blocked_input(im: &mut Importer, x: &Var) -> Var {
    let s = &x.shape;
    let shape = vec![s[0], blocks(s[1]), s[2], s[3], BLOCK];
    im.b.call("nchwc", &[x], &[int(BLOCK as i64)], DType::F32, shape)
}

/// F x C x KH x KW weights packed as FB x CB x KH x KW x L x M (or, for a
/// plain input, FB x C x KH x KW x M), zero past F and C. Elements move as
/// float32, never widened.
fn pack_weights(w: &Tensor, plain_in: bool) -> Result<Tensor, String> {
    let s = w.shape();
    let (f, c, kh, kw) = (s[0], s[1], s[2], s[3]);
    let src = w.contiguous();
    let src = src
        .as_slice::<f32>()
        .ok_or("internal error: float32 weights are not f32")?;
    let (fb, l) = (blocks(f), if plain_in { 1 } else { BLOCK });
    let cb = if plain_in { c } else { blocks(c) };
    let mut packed = vec![0.0f32; fb * cb * kh * kw * l * BLOCK];
    for fo in 0..f {
        for ci in 0..c {
            for i in 0..kh {
                for j in 0..kw {
                    let (b, lane) = if plain_in {
                        (ci, 0)
                    } else {
                        (ci / BLOCK, ci % BLOCK)
                    };
                    let to = ((((fo / BLOCK * cb + b) * kh + i) * kw + j) * l + lane) * BLOCK
                        + fo % BLOCK;
                    packed[to] = src[((fo * c + ci) * kh + i) * kw + j];
                }
            }
        }
    }
    let shape = if plain_in {
        vec![fb, c, kh, kw, BLOCK]
    } else {
        vec![fb, cb, kh, kw, BLOCK, BLOCK]
    };
    Ok(Tensor::from_slice(DType::F32, &shape, &packed))
}

/// F x 16 x KH x KW weights of groups of one block each packed as
/// G x KH x KW x L x M (output channel g M + m, input channel l of its
/// group). Elements move as float32, never widened.
fn pack_grouped(w: &Tensor) -> Result<Tensor, String> {
    let s = w.shape();
    let (f, kh, kw) = (s[0], s[2], s[3]);
    let src = w.contiguous();
    let src = src
        .as_slice::<f32>()
        .ok_or("internal error: float32 weights are not f32")?;
    let mut packed = vec![0.0f32; f * kh * kw * BLOCK];
    for fo in 0..f {
        for l in 0..BLOCK {
            for i in 0..kh {
                for j in 0..kw {
                    let to = (((fo / BLOCK * kh + i) * kw + j) * BLOCK + l) * BLOCK + fo % BLOCK;
                    packed[to] = src[((fo * BLOCK + l) * kh + i) * kw + j];
                }
            }
        }
    }
    let shape = [f / BLOCK, kh, kw, BLOCK, BLOCK];
    Ok(Tensor::from_slice(DType::F32, &shape, &packed))
}

/// A bias of F channels (or none: zeros) as FB x M, zero past F.
fn pack_bias(bias: Option<&Tensor>, f: usize) -> Result<Tensor, String> {
    let mut packed = vec![0.0f32; blocks(f) * BLOCK];
    if let Some(b) = bias {
        let b = b.contiguous();
        let src = b
            .as_slice::<f32>()
            .ok_or("internal error: a float32 bias is not f32")?;
        packed[..f].copy_from_slice(&src[..f]);
    }
    Ok(Tensor::from_slice(DType::F32, &[blocks(f), BLOCK], &packed))
}

/// ReLU of a blocked value, blocked; false when the input is not blocked.
/// A convolution's result read by nothing else takes it as its epilogue.
pub(crate) fn relu(im: &mut Importer, n: &Node) -> bool {
    let Some(x) = im.blocked(n, 0) else {
        return false;
    };
    if let Some(fused) = epilogue(im, n, 0, "_relu", None) {
        im.set_blocked(n, 0, fused);
        return true;
    }
    let y =
        im.b.call("relu_r5", &[&x.var], &[], DType::F32, x.var.shape.clone());
    computed(im, n, y, x.channels);
    true
}

/// The sum of two blocked values of one shape, blocked; false otherwise.
/// A convolution's result read by nothing else takes the other operand as
/// its residual.
pub(crate) fn add(im: &mut Importer, n: &Node) -> bool {
    let (Some(a), Some(b)) = (im.blocked(n, 0), im.blocked(n, 1)) else {
        return false;
    };
    if a.var.shape != b.var.shape || a.channels != b.channels {
        return false;
    }
    for (k, r) in [(0, &b), (1, &a)] {
        if let Some(fused) = epilogue(im, n, k, "_add", Some(r)) {
            im.set_blocked(n, 0, fused);
            return true;
        }
    }
    let shape = a.var.shape.clone();
    let y =
        im.b.call("add_r5", &[&a.var, &b.var], &[], DType::F32, shape);
    computed(im, n, y, a.channels);
    true
}

/// A 2-D max pooling of a blocked value, blocked: `scalars` are
/// `maxpool2d`'s, `out` the pooled spatial sizes. False when the input is
/// not blocked.
pub(crate) fn maxpool(im: &mut Importer, n: &Node, scalars: &[String], out: &[usize]) -> bool {
    let Some(x) = im.blocked(n, 0) else {
        return false;
    };
    let s = &x.var.shape;
    let shape = vec![s[0], s[1], out[0], out[1], BLOCK];
    let y =
        im.b.call("maxpool2d_nchwc", &[&x.var], scalars, DType::F32, shape);
    computed(im, n, y, x.channels);
    true
}

/// Inference batch norm (`eps`) of a blocked value by constant float32
/// statistics of its channels, blocked; false when the input is not
/// blocked or a statistic is not such a constant. A convolution's result
/// that nothing else reads takes it into its packed weights and bias, its
/// epilogue still open to a ReLU or a residual; any other value gets the
/// scale and shift applied (`scale_shift_nchwc`), packed here.
pub(crate) fn batchnorm(im: &mut Importer, n: &Node, eps: f64) -> Result<bool, String> {
    let Some(x) = im.blocked(n, 0) else {
        return Ok(false);
    };
    let c = x.channels;
    let mut stats = Vec::new();
    for k in 1..5 {
        match im.value(n, k)? {
            Value::Const(t) if t.dtype() == DType::F32 && t.shape() == [c] => {
                stats.push(t.to_f64_vec());
            }
            _ => return Ok(false),
        }
    }
    let started = Instant::now();
    let (gamma, beta, mean, var) = (&stats[0], &stats[1], &stats[2], &stats[3]);
    let scale: Vec<f64> = (0..c).map(|k| gamma[k] / (var[k] + eps).sqrt()).collect();
    let shift: Vec<f64> = (0..c).map(|k| beta[k] - mean[k] * scale[k]).collect();
    let key = n.proto.output.first().cloned().unwrap_or_default();
    if let Some(folded) = fold_into_conv(im, n, &x, &scale, &shift, &key, started) {
        im.set_blocked(n, 0, folded);
        return Ok(true);
    }
    let s = im.b.weight(&format!("{key}#scale"), &per_lane(&scale));
    let t = im.b.weight(&format!("{key}#shift"), &per_lane(&shift));
    let y = im.b.call(
        "scale_shift_nchwc",
        &[&x.var, &s, &t],
        &[],
        DType::F32,
        x.var.shape.clone(),
    );
    computed(im, n, y, c);
    Ok(true)
}

/// Per-channel values as FB x M, zero past them.
fn per_lane(v: &[f64]) -> Tensor {
    let mut packed = vec![0.0; blocks(v.len()) * BLOCK];
    packed[..v.len()].copy_from_slice(v);
    Tensor::from_f64(DType::F32, &[blocks(v.len()), BLOCK], packed)
}

/// Blocked `x`, the result of a convolution without an epilogue that
/// nothing but `n` reads, with `scale` and then `shift` applied per output
/// channel folded into its packed weights and bias (new parameters under
/// `key`; the old ones dropped when nothing else reads them). `None` when
/// `x` is not such a result.
fn fold_into_conv(
    im: &mut Importer,
    n: &Node,
    x: &Blocked,
    scale: &[f64],
    shift: &[f64],
    key: &str,
    started: Instant,
) -> Option<Blocked> {
    let (Some(call), Some(stmt)) = (&x.conv, x.stmt) else {
        return None;
    };
    let plain_defs = ["conv2d_nchwc", "conv2d_nchw_nchwc"];
    if !plain_defs.contains(&call.def.as_str()) || im.readers.get(n.input(0)?).copied() != Some(1) {
        return None;
    }
    let weight = |name: &str| {
        im.b.weights
            .iter()
            .find(|(w, _)| w == name)
            .map(|(_, t)| (t.to_f64_vec(), t.shape().to_vec()))
    };
    let ((mut w, ws), (mut b, bs)) = (weight(&call.tensors[1])?, weight(&call.tensors[2])?);
    // Both packings end in the output lane m of block fb, the outermost
    // axis: element i belongs to output channel (i / per_block) M + i % M.
    let per_block = w.len() / blocks(scale.len()).max(1);
    let factor = |i: usize| {
        scale
            .get(i / per_block * BLOCK + i % BLOCK)
            .copied()
            .unwrap_or(0.0)
    };
    for (i, v) in w.iter_mut().enumerate() {
        *v *= factor(i);
    }
    for (i, v) in b.iter_mut().enumerate().take(scale.len()) {
        *v = *v * scale[i] + shift[i];
    }
    let w = Tensor::from_f64(DType::F32, &ws, w);
    let b = Tensor::from_f64(DType::F32, &bs, b);
    im.b.packing.add(&w, started.elapsed().as_secs_f64());
    let wt = im.b.weight(&format!("{key}#folded_weights"), &w);
    let bt = im.b.weight(&format!("{key}#folded_bias"), &b);
    let old = [call.tensors[1].clone(), call.tensors[2].clone()];
    let mut call = call.clone();
    call.tensors[1] = wt.name;
    call.tensors[2] = bt.name;
    call.write(im, stmt, &x.var);
    if let Some(t) = im.b.drop_unread_weight(&old[0]) {
        im.b.packing.remove(&t);
    }
    im.b.drop_unread_weight(&old[1]);
    Some(Blocked {
        conv: Some(call),
        ..x.clone()
    })
}

/// A concatenation along the channels of blocked values of one batch and
/// image size, blocked, when every input but the last ends on a whole
/// block (so that the blocks simply follow one another); false otherwise.
pub(crate) fn concat(im: &mut Importer, n: &Node) -> Result<bool, String> {
    let parts: Option<Vec<Blocked>> = (0..n.proto.input.len()).map(|k| im.blocked(n, k)).collect();
    let Some(parts) = parts.filter(|p| p.len() >= 2) else {
        return Ok(false);
    };
    // The plain tensors are N x C x H x W: the channel axis is 1 or -3.
    if !matches!(n.int("axis")?, Some(1 | -3)) {
        return Ok(false);
    }
    let (first, last) = (&parts[0].var.shape, parts.len() - 1);
    let fits = parts.iter().enumerate().all(|(k, p)| {
        let s = &p.var.shape;
        (s[0], s[2], s[3]) == (first[0], first[2], first[3])
            && (k == last || p.channels.is_multiple_of(BLOCK))
    });
    if !fits {
        return Ok(false);
    }
    let mut acc = parts[0].var.clone();
    for p in &parts[1..] {
        let mut shape = acc.shape.clone();
        shape[1] += p.var.shape[1];
        acc =
            im.b.call("concat_r5_a1", &[&acc, &p.var], &[], DType::F32, shape);
    }
    let channels = parts.iter().map(|p| p.channels).sum();
    computed(im, n, acc, channels);
    Ok(true)
}

/// Binds `n`'s output to blocked `y`, which the def's last statement
/// computes.
fn computed(im: &mut Importer, n: &Node, y: Var, channels: usize) {
    let stmt = Some(im.b.stmts.len() - 1);
    let b = Blocked {
        var: y,
        channels,
        stmt,
        conv: None,
    };
    im.set_blocked(n, 0, b);
}

/// Input `k` of `n`, computed by a convolution that nothing but `n` reads,
/// with `suffix` added to its call's def (and residual `r`, for `_add`, as
/// its fourth tensor); `None` when it is not such a result or the def has
/// no such variant. The residual must be computed before the convolution's
/// statement, which stays where it is.
fn epilogue(
    im: &mut Importer,
    n: &Node,
    k: usize,
    suffix: &str,
    r: Option<&Blocked>,
) -> Option<Blocked> {
    let x = im.blocked(n, k)?;
    let (Some(call), Some(stmt)) = (&x.conv, x.stmt) else {
        return None;
    };
    if im.readers.get(n.input(k)?).copied() != Some(1) {
        return None;
    }
    let def = format!("{}{suffix}", call.def);
    let known = [
        "conv2d_nchwc_relu",
        "conv2d_nchwc_add",
        "conv2d_nchwc_add_relu",
        "conv2d_nchw_nchwc_relu",
    ];
    if !known.contains(&def.as_str()) {
        return None;
    }
    let mut call = ConvCall {
        def,
        ..call.clone()
    };
    if let Some(r) = r {
        if r.stmt.is_some_and(|s| s >= stmt) || r.var.shape != x.var.shape {
            return None;
        }
        call.tensors.push(r.var.name.clone());
    }
    call.write(im, stmt, &x.var);
    // An `_add` may still take a ReLU.
    let open = call.def == "conv2d_nchwc_add";
    Some(Blocked {
        conv: open.then_some(call),
        ..x
    })
}
