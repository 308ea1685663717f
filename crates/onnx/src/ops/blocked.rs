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
pub const READS_BLOCKED: &[&str] = &["Conv", "Relu", "Add", "MaxPool"];

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
        None => Input::Plain(im.var(n, 0)?),
    };
    let key = n.input(1).unwrap_or_default();
    let bias = bias.map(|b| (b, n.input(2).unwrap_or_default()));
    let y = if group == 1 {
        conv_packed(im, input, weight, key, bias, win)?
    } else {
        // Reading a plain input in place costs more than reordering it
        // first (measured: 8.8 ms against 2.0 + 3.8 ms for the benchmark's
        // grouped convolution).
        let input = match input {
            Input::Blocked(v) => v,
            Input::Plain(x) => blocked_input(im, &x),
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
