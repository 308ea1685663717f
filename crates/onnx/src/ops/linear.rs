//! `MatMul`, `Gemm`, `BatchNormalization` (inference), `Softmax` along
//! the last axis (any other is `along.rs`), and
//! `Einsum` of a matrix product (the general form is `einsum.rs`).

use ir::DType;
use tensor::Tensor;

use super::{axis, blocked, MAX_RANK};
use crate::build::{float, Node, Value, Var};
use crate::import::Importer;

pub fn matmul(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    im.unswap(n.input(0).unwrap_or_default());
    // B as a deferred transpose: the product reads its source transposed.
    if let Some(bt) = im.swapped_input(n, 1) {
        let a = im.var(n, 0)?;
        let (sa, sb) = (&a.shape, &bt.shape);
        let r = sa.len();
        let def = match r {
            2 => Some("matmul_tb"),
            3 => Some("batch_matmul_tb"),
            4 => Some("batch_matmul_r4_tb"),
            5 => Some("batch_matmul_r5_tb"),
            _ => None,
        };
        // Ranks 2 to 5 only reach the shapes' comparison.
        let fits = |_: &&str| sb.len() == r && sa[..r - 2] == sb[..r - 2] && sa[r - 1] == sb[r - 1];
        if let Some(def) = def.filter(fits) {
            let mut shape = sa[..r - 1].to_vec();
            shape.push(sb[r - 2]);
            let y = im.b.call(def, &[&a, &bt], &[], DType::F32, shape);
            im.set(n, 0, Value::Var(y));
            return Ok(());
        }
    }
    im.unswap_inputs(n);
    let (a, b) = (im.var(n, 0)?, im.var(n, 1)?);
    let (sa, sb) = (&a.shape, &b.shape);
    if a.dtype != DType::F32 || b.dtype != DType::F32 {
        let y = general(im, n, &a, &b)?;
        im.set(n, 0, Value::Var(y));
        return Ok(());
    }
    let (def, shape) = match (sa.len(), sb.len()) {
        (2, 2) if sa[1] == sb[0] => ("matmul", vec![sa[0], sb[1]]),
        (3, 2) if sa[2] == sb[0] => ("matmul_r3_r2", vec![sa[0], sa[1], sb[1]]),
        (3, 3) if sa[0] == sb[0] && sa[2] == sb[1] => ("batch_matmul", vec![sa[0], sa[1], sb[2]]),
        (4, 4) if sa[..2] == sb[..2] && sa[3] == sb[2] => {
            ("batch_matmul_r4", vec![sa[0], sa[1], sa[2], sb[3]])
        }
        (5, 5) if sa[..3] == sb[..3] && sa[4] == sb[3] => {
            ("batch_matmul_r5", vec![sa[0], sa[1], sa[2], sa[3], sb[4]])
        }
        _ if sa.len() > 5 || sb.len() > 5 => {
            return Err(n.error(format!(
                "MatMul of ranks {} and {} is not supported",
                sa.len(),
                sb.len()
            )))
        }
        // Vectors, broadcast batch dimensions, and the mismatches (which
        // `general` names).
        _ => {
            let y = general(im, n, &a, &b)?;
            im.set(n, 0, Value::Var(y));
            return Ok(());
        }
    };
    let y = im.b.call(def, &[&a, &b], &[], DType::F32, shape);
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// numpy's `matmul` of `a` and `b` of one type as a comprehension: a
/// vector operand is a row (`a`) or a column (`b`) whose axis the result
/// drops, and the batch dimensions before the last two broadcast.
fn general(im: &mut Importer, n: &Node, a: &Var, b: &Var) -> Result<Var, String> {
    let (sa, sb) = (&a.shape, &b.shape);
    let mismatch = || n.error(format!("shapes {sa:?} and {sb:?} do not multiply"));
    if a.dtype != b.dtype || a.dtype == DType::Bool {
        return Err(n.error(format!(
            "MatMul of {} and {} is not supported",
            a.dtype, b.dtype
        )));
    }
    if sa.is_empty() || sb.is_empty() {
        return Err(mismatch());
    }
    let k = sa[sa.len() - 1];
    let k_of_b = if sb.len() == 1 {
        sb[0]
    } else {
        sb[sb.len() - 2]
    };
    if k != k_of_b {
        return Err(mismatch());
    }
    let batch_a = &sa[..sa.len().saturating_sub(2)];
    let batch_b = &sb[..sb.len().saturating_sub(2)];
    let batch = super::elementwise::broadcast(batch_a, batch_b).ok_or_else(mismatch)?;
    let nb = batch.len();
    let batch_subs = |own: &[usize]| -> Vec<String> {
        (0..own.len())
            .map(|d| {
                let j = nb - own.len() + d;
                if own[d] == 1 && batch[j] != 1 {
                    "0".to_string()
                } else {
                    format!("_i{j}")
                }
            })
            .collect()
    };
    let mut shape = batch.clone();
    let mut a_subs = batch_subs(batch_a);
    if sa.len() >= 2 {
        a_subs.push(format!("_i{}", shape.len()));
        shape.push(sa[sa.len() - 2]);
    }
    a_subs.push("_k".to_string());
    let mut b_subs = batch_subs(batch_b);
    b_subs.push("_k".to_string());
    if sb.len() >= 2 {
        b_subs.push(format!("_i{}", shape.len()));
        shape.push(sb[sb.len() - 1]);
    }
    if shape.len() > MAX_RANK {
        return Err(n.error(format!("a result of rank {} is not supported", shape.len())));
    }
    let rhs = format!(
        "{} * {}",
        super::point::read(a, &a_subs),
        super::point::read(b, &b_subs)
    );
    Ok(im
        .b
        .compute("+=!", &rhs, &[format!("_k in 0:{k}")], a.dtype, shape))
}

pub fn gemm(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let (a, b) = (im.var(n, 0)?, im.var(n, 1)?);
    let alpha = f64::from(n.float("alpha")?.unwrap_or(1.0));
    let mut beta = f64::from(n.float("beta")?.unwrap_or(1.0));
    let ta = n.int("transA")?.unwrap_or(0) != 0;
    let tb = n.int("transB")?.unwrap_or(0) != 0;
    if im.version(n) < 7 {
        // Gemm 6 broadcasts C only with `broadcast = 1`; C of the result's
        // shape needs no broadcasting, so both read C as Gemm 7 does.
        let _ = n.int("broadcast")?;
    }
    if a.shape.len() != 2 || b.shape.len() != 2 {
        return Err(n.error(format!(
            "A {:?} and B {:?} must be matrices",
            a.shape, b.shape
        )));
    }
    let (m, k) = if ta {
        (a.shape[1], a.shape[0])
    } else {
        (a.shape[0], a.shape[1])
    };
    let (k2, nn) = if tb {
        (b.shape[1], b.shape[0])
    } else {
        (b.shape[0], b.shape[1])
    };
    if k != k2 {
        return Err(n.error(format!(
            "A {:?} and B {:?} do not multiply (transA = {}, transB = {})",
            a.shape,
            b.shape,
            u8::from(ta),
            u8::from(tb)
        )));
    }
    // A missing C is zeros of N, shared by the Gemms of that N.
    let key = n
        .input(2)
        .map_or_else(|| format!("zeros{nn}#gemm"), |c| format!("{c}#gemm"));
    // C as a row of N (broadcast over rows) or a full M x N matrix; any
    // other C that broadcasts to M x N (a column, a full C with transposed
    // operands) is added after a product without it.
    let mut after: Option<Var> = None;
    let (c, full): (Var, bool) = match n.input(2) {
        None => {
            beta = 0.0;
            (im.b.weight(&key, &Tensor::zeros(DType::F32, &[nn])), false)
        }
        Some(_) => match im.value(n, 2)? {
            Value::Const(t)
                if t.shape() != [m, nn]
                    && (t.len() == 1 || t.shape().last() == Some(&nn) && t.len() == nn) =>
            {
                // A row of N, or one value for every element.
                let source: Vec<usize> = (0..nn).map(|j| j % t.len()).collect();
                let row = super::layout::gather(&t, &[nn], &source);
                (im.b.weight(&key, &row), false)
            }
            Value::Const(t) if t.shape() == [m, nn] => (im.b.weight(&key, &t), true),
            Value::Var(v) if v.shape == [nn] => (v, false),
            Value::Var(v) if v.shape == [m, nn] => (v, true),
            other => {
                after = Some(im.as_var(n, 2, other));
                (
                    im.b.weight(
                        &format!("zeros{nn}#gemm"),
                        &Tensor::zeros(DType::F32, &[nn]),
                    ),
                    false,
                )
            }
        },
    };
    let (c, full) = if full && (ta || tb) {
        after = Some(c);
        (
            im.b.weight(
                &format!("zeros{nn}#gemm"),
                &Tensor::zeros(DType::F32, &[nn]),
            ),
            false,
        )
    } else {
        (c, full)
    };
    let def = match (full, ta, tb) {
        (false, false, false) => "gemm",
        (false, true, false) => "gemm_ta",
        (false, false, true) => "gemm_tb",
        (false, true, true) => "gemm_tab",
        _ => "gemm_full",
    };
    let product_beta = if after.is_some() { 0.0 } else { beta };
    let mut y = im.b.call(
        def,
        &[&a, &b, &c],
        &[float(alpha), float(product_beta)],
        DType::F32,
        vec![m, nn],
    );
    if let Some(c) = after {
        y = super::map::map(
            im,
            n,
            &format!("_a + {} * _b", float(beta)),
            &[y, c],
            DType::F32,
        )?;
        if y.shape != [m, nn] {
            return Err(n.error(format!("C does not broadcast to {m} x {nn}")));
        }
    }
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `BatchNormalization`'s channel count and its per-channel scale, bias,
/// mean and variance (inputs 1 to 4), each checked to be `[C]`.
pub(crate) fn batchnorm_params(
    im: &mut Importer,
    n: &Node,
    x: &Var,
) -> Result<(usize, Vec<Var>), String> {
    let c = *x
        .shape
        .get(1)
        .ok_or_else(|| n.error("input has no channel axis"))?;
    let mut params = Vec::new();
    for (k, what) in [(1, "scale"), (2, "bias"), (3, "mean"), (4, "var")] {
        let v = im.var(n, k)?;
        if v.shape != [c] {
            return Err(n.error(format!("{what} has shape {:?}, not [{c}]", v.shape)));
        }
        params.push(v);
    }
    Ok((c, params))
}

pub fn batchnorm(im: &mut Importer, n: &Node) -> Result<(), String> {
    if n.int("training_mode")?.unwrap_or(0) != 0 {
        return super::normalize::batchnorm_training(im, n);
    }
    im.outputs(n, 1)?;
    let eps = f64::from(n.float("epsilon")?.unwrap_or(1e-5));
    // The running statistics' momentum matters in training only.
    let _ = n.float("momentum")?;
    if im.version(n) < 9 && n.int("spatial")?.unwrap_or(1) == 0 {
        return Err(n.error("spatial = 0 (statistics per activation) is not supported"));
    }
    if im.version(n) < 7 && n.int("is_test")?.unwrap_or(0) == 0 {
        return Err(n.error("is_test = 0 (training) is not supported (inference only)"));
    }
    if blocked::batchnorm(im, n, eps)? {
        return Ok(());
    }
    im.plain_inputs(n);
    let x = im.var(n, 0)?;
    let (_, params) = batchnorm_params(im, n, &x)?;
    let r = x.shape.len();
    if !(2..=MAX_RANK).contains(&r) {
        return Err(n.error(format!(
            "input of rank {r} is not supported (2 to {MAX_RANK} are)"
        )));
    }
    let y = im.b.call(
        &format!("batchnorm_r{r}"),
        &[&x, &params[0], &params[1], &params[2], &params[3]],
        &[float(eps)],
        DType::F32,
        x.shape.clone(),
    );
    im.set(n, 0, Value::Var(y));
    Ok(())
}

pub fn softmax(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    let r = x.shape.len();
    // Before opset 13 the default axis is 1 and the input is coerced to 2-D
    // there; that is the last axis exactly when the axis is the last.
    let default = if im.version(n) >= 13 { -1 } else { 1 };
    let a = axis(n, n.int("axis")?.unwrap_or(default), r)?;
    // The prelude's defs take float32 rows along the last axis of ranks 2
    // to 5; any other softmax is comprehensions of its own.
    if a + 1 != r || !(2..=MAX_RANK).contains(&r) || x.dtype != DType::F32 {
        return super::along::softmax(im, n);
    }
    let y = im.b.call(
        &format!("softmax_r{r}"),
        &[&x],
        &[],
        DType::F32,
        x.shape.clone(),
    );
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `Einsum` equations that are matrix products: each letter of the two
/// operands is a batch index (in both and in the result), a row index (in
/// the first and the result), a column index (in the second and the
/// result) or a summed index (in both, not in the result); one of each
/// besides up to three batch indices, in any operand layout the prelude's
/// matmul defs read (`_ta`, `_tb`).
pub fn einsum(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let eq = n
        .string("equation")?
        .ok_or_else(|| n.error("attribute `equation` is required"))?
        .replace(' ', "");
    let y = match matrix_product(im, n, &eq)? {
        Some(y) => y,
        None => super::einsum::general(im, n, &eq)?,
    };
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// An `Einsum` that is a (batched) matrix product of two float32 operands,
/// possibly transposed, as a call of the prelude's product; `None` for
/// any other equation.
fn matrix_product(im: &mut Importer, n: &Node, eq: &str) -> Result<Option<Var>, String> {
    let Some((lhs, out)) = eq.split_once("->") else {
        return Ok(None);
    };
    let Some((a_ix, b_ix)) = lhs.split_once(',') else {
        return Ok(None);
    };
    if n.proto.input.len() != 2 || a_ix.contains('.') || b_ix.contains('.') {
        return Ok(None);
    }
    let (a, b) = (im.var(n, 0)?, im.var(n, 1)?);
    if a.dtype != DType::F32 || b.dtype != DType::F32 {
        return Ok(None);
    }
    let (ac, bc, oc): (Vec<char>, Vec<char>, Vec<char>) = (
        a_ix.chars().collect(),
        b_ix.chars().collect(),
        out.chars().collect(),
    );
    if ac.len() != a.shape.len() || bc.len() != b.shape.len() {
        return Ok(None);
    }
    let batch: Vec<char> = oc
        .iter()
        .copied()
        .filter(|c| ac.contains(c) && bc.contains(c))
        .collect();
    let m: Vec<char> = oc
        .iter()
        .copied()
        .filter(|c| ac.contains(c) && !bc.contains(c))
        .collect();
    let nn: Vec<char> = oc
        .iter()
        .copied()
        .filter(|c| bc.contains(c) && !ac.contains(c))
        .collect();
    let k: Vec<char> = ac
        .iter()
        .copied()
        .filter(|c| bc.contains(c) && !oc.contains(c))
        .collect();
    if m.len() != 1 || nn.len() != 1 || k.len() != 1 || batch.len() > 3 {
        return Ok(None);
    }
    let (m, nn, k) = (m[0], nn[0], k[0]);
    let with = |rest: [char; 2]| -> Vec<char> { batch.iter().copied().chain(rest).collect() };
    if oc != with([m, nn]) {
        return Ok(None);
    }
    let ta = if ac == with([m, k]) {
        false
    } else if ac == with([k, m]) {
        true
    } else {
        return Ok(None);
    };
    let tb = if bc == with([k, nn]) {
        false
    } else if bc == with([nn, k]) {
        true
    } else {
        return Ok(None);
    };
    let def = match (batch.len(), ta, tb) {
        (0, false, false) => "matmul",
        (0, true, false) => "matmul_ta",
        (0, false, true) => "matmul_tb",
        (0, true, true) => "matmul_tab",
        (1, false, false) => "batch_matmul",
        (1, false, true) => "batch_matmul_tb",
        (2, false, false) => "batch_matmul_r4",
        (2, false, true) => "batch_matmul_r4_tb",
        (3, false, false) => "batch_matmul_r5",
        (3, false, true) => "batch_matmul_r5_tb",
        _ => return Ok(None),
    };
    let size = |c: char| -> Result<usize, String> {
        let da = ac.iter().position(|&x| x == c).map(|p| a.shape[p]);
        let db = bc.iter().position(|&x| x == c).map(|p| b.shape[p]);
        match (da, db) {
            (Some(x), Some(y)) if x != y => Err(n.error(format!(
                "index `{c}` is {x} in one operand and {y} in the other"
            ))),
            (Some(x), _) | (None, Some(x)) => Ok(x),
            (None, None) => Err(n.error(format!("index `{c}` is in no operand"))),
        }
    };
    size(k)?;
    let shape = oc.iter().map(|&c| size(c)).collect::<Result<Vec<_>, _>>()?;
    Ok(Some(im.b.call(def, &[&a, &b], &[], DType::F32, shape)))
}
