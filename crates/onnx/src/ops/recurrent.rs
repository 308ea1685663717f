//! `RNN`, `GRU` and `LSTM`: unrolled over the sequence into comprehensions
//! in the model def (the sequence length is known at import), or for a
//! sequence longer than [`MOST_STEPS`], a loop region over it carrying the
//! states and the hidden states so far (the unrolled program grows with
//! each step; the loop's body is the same comprehensions at the loop's
//! index). Per
//! direction, the input's products with `W` for every step at once, then
//! per step the hidden state's product with `R` and the gates, as ONNX
//! defines them (gate orders: GRU z, r, h; LSTM i, o, f, c; `B` the input
//! biases then the recurrent ones; LSTM peepholes `P` in order i, o, f;
//! GRU `linear_before_reset`). `Y` stacks every step's hidden state, `Y_h`
//! (and LSTM's `Y_c`) the last one; `layout = 1` puts the batch first.
//!
//! Implemented: the activations `Sigmoid`, `Tanh` and `Relu` (the defaults
//! or as given), forward, reverse and bidirectional, initial states, and
//! `sequence_lens` equal to the sequence length. Refused by name: `clip`,
//! `input_forget`, activations with parameters, and shorter sequences.

use tensor::Tensor;

use crate::build::{Node, Value, Var};
use crate::import::Importer;

/// The longest sequence unrolled; a longer one is a loop.
pub const MOST_STEPS: usize = 256;

/// The hidden states of one direction, in sequence order: one tensor per
/// step (unrolled), or all steps in one `[steps, batch, hidden]` tensor
/// (a loop).
enum Sequence {
    Steps(Vec<Var>),
    Stacked(Var),
}

/// An activation's expression of `_v`.
fn activation(n: &Node, name: &str) -> Result<&'static str, String> {
    Ok(match name {
        "Sigmoid" => "sigmoid(_v)",
        "Tanh" => "tanh(_v)",
        "Relu" => "max(_v, 0)",
        other => return Err(n.error(format!("activation `{other}` is not supported"))),
    })
}

pub fn recurrent(im: &mut Importer, n: &Node) -> Result<(), String> {
    let lstm = n.op == "LSTM";
    im.outputs(n, if lstm { 3 } else { 2 })?;
    let (x, w, r) = (im.var(n, 0)?, im.var(n, 1)?, im.var(n, 2)?);
    let gates = match n.op {
        "RNN" => 1,
        "GRU" => 3,
        _ => 4,
    };
    let hidden = n
        .int("hidden_size")?
        .and_then(|h| usize::try_from(h).ok())
        .ok_or_else(|| n.error("attribute `hidden_size` is required"))?;
    let batch_first = n.int("layout")?.unwrap_or(0) != 0;
    let direction = n
        .string("direction")?
        .unwrap_or_else(|| "forward".to_string());
    let dirs = match direction.as_str() {
        "forward" | "reverse" => 1,
        "bidirectional" => 2,
        other => return Err(n.error(format!("direction `{other}` is not supported"))),
    };
    if n.float("clip")?.is_some() {
        return Err(n.error("clip is not supported"));
    }
    if n.int("input_forget")?.unwrap_or(0) != 0 {
        return Err(n.error("input_forget = 1 is not supported"));
    }
    if n.floats("activation_alpha")?.is_some() || n.floats("activation_beta")?.is_some() {
        return Err(n.error("activations with parameters are not supported"));
    }
    let linear_before_reset = n.op == "GRU" && n.int("linear_before_reset")?.unwrap_or(0) != 0;
    let t = x.dtype;
    if !t.is_float() || x.shape.len() != 3 {
        return Err(n.error(format!(
            "an input {t} {:?} (a float sequence of rank 3 is needed)",
            x.shape
        )));
    }
    let (steps, batch, features) = if batch_first {
        (x.shape[1], x.shape[0], x.shape[2])
    } else {
        (x.shape[0], x.shape[1], x.shape[2])
    };
    let gh = gates * hidden;
    if w.shape != [dirs, gh, features] || r.shape != [dirs, gh, hidden] {
        return Err(n.error(format!(
            "W {:?} and R {:?}, not [{dirs}, {gh}, {features}] and [{dirs}, {gh}, {hidden}]",
            w.shape, r.shape
        )));
    }
    if n.input(4).is_some() {
        let lens = super::ints(&im.constant(n, 4, "the sequence lengths")?);
        if lens.iter().any(|&l| l != steps as i64) {
            return Err(n.error(format!(
                "sequence lengths {lens:?} other than {steps} are not supported"
            )));
        }
    }
    // The activations: f, g (GRU, LSTM), h (LSTM) per direction.
    let count = match n.op {
        "RNN" => 1,
        "GRU" => 2,
        _ => 3,
    };
    let defaults = ["Sigmoid", "Tanh", "Tanh"];
    let names: Vec<String> = match n.strings("activations")? {
        Some(a) if a.len() == count * dirs => a,
        Some(a) => return Err(n.error(format!("{} activations for {dirs} directions", a.len()))),
        None if n.op == "RNN" => vec!["Tanh".to_string(); dirs],
        None => (0..dirs)
            .flat_map(|_| defaults[..count].iter().map(|s| s.to_string()))
            .collect(),
    };
    let acts: Vec<&str> = names
        .iter()
        .map(|a| activation(n, a))
        .collect::<Result<_, _>>()?;
    let zeros = |im: &mut Importer, key: &str, shape: &[usize]| {
        im.b.weight(
            &format!("zeros{shape:?}{t}#{key}"),
            &Tensor::zeros(t, shape),
        )
    };
    let bias = match n.input(3) {
        Some(_) => im.var(n, 3)?,
        None => zeros(im, "bias", &[dirs, 2 * gh]),
    };
    let state = |im: &mut Importer, k: usize, what: &str| -> Result<Var, String> {
        match n.input(k) {
            Some(_) => {
                let v = im.var(n, k)?;
                let want = if batch_first {
                    [batch, dirs, hidden]
                } else {
                    [dirs, batch, hidden]
                };
                if v.shape != want {
                    return Err(n.error(format!("{what} of shape {:?}, not {want:?}", v.shape)));
                }
                Ok(v)
            }
            None => Ok(zeros(
                im,
                what,
                &if batch_first {
                    [batch, dirs, hidden]
                } else {
                    [dirs, batch, hidden]
                },
            )),
        }
    };
    let h0 = state(im, 5, "initial_h")?;
    let c0 = if lstm {
        Some(state(im, 6, "initial_c")?)
    } else {
        None
    };
    let peephole = match n.input(7).filter(|_| lstm) {
        Some(_) => im.var(n, 7)?,
        None => zeros(im, "peephole", &[dirs, 3 * hidden]),
    };
    // A state of direction d read at (b, u): initial ones by layout.
    let state_at = |v: &Var, d: usize, b: &str, u: &str| {
        if batch_first {
            format!("{}({b}, {d}, {u})", v.name)
        } else {
            format!("{}({d}, {b}, {u})", v.name)
        }
    };
    let mut last_h = Vec::new();
    let mut last_c = Vec::new();
    let mut every: Vec<Sequence> = Vec::new();
    for d in 0..dirs {
        let act = &acts[d * count..(d + 1) * count];
        let f = |e: &str, k: usize| act[k].replace("_v", &format!("({e})"));
        // The input's products with W at every step: [steps, batch, G*H].
        let xt = if batch_first {
            "_i1, _i0, _k"
        } else {
            "_i0, _i1, _k"
        };
        let xw = im.b.compute(
            "+=!",
            &format!("{}({xt}) * {}({d}, _i2, _k)", x.name, w.name),
            &[format!("_k in 0:{features}")],
            t,
            vec![steps, batch, gh],
        );
        let reverse = direction == "reverse" || d == 1;
        // One step at sequence position `step` (an expression) from the
        // previous states `h` and `c` (the initial ones when `None`): the
        // new hidden state, and an LSTM's new cell state.
        let cell = |im: &mut Importer, xw: &Var, step: &str, h: &Option<Var>, c: &Option<Var>| {
            let mut next_c = None;
            let prev = |v: &Option<Var>, first: &Var, b: &str, u: &str| match v {
                Some(v) => format!("{}({b}, {u})", v.name),
                None => state_at(first, d, b, u),
            };
            let hr = im.b.compute(
                "+=!",
                &format!("{} * {}({d}, _i1, _k)", prev(h, &h0, "_i0", "_k"), r.name),
                &[format!("_k in 0:{hidden}")],
                t,
                vec![batch, gh],
            );
            // Gate j at unit u: its input and recurrent parts and biases.
            let part = |j: usize, u: &str| {
                format!(
                "{xw}({step}, _i0, {o} + {u}) + {hr}(_i0, {o} + {u}) + {b}({d}, {o} + {u}) + {b}({d}, {gh} + {o} + {u})",
                xw = xw.name,
                hr = hr.name,
                b = bias.name,
                o = j * hidden
            )
            };
            let hp = prev(h, &h0, "_i0", "_i1");
            let next = match n.op {
                "RNN" => {
                    im.b.compute("=", &f(&part(0, "_i1"), 0), &[], t, vec![batch, hidden])
                }
                "GRU" => {
                    let z = f(&part(0, "_i1"), 0);
                    let rg =
                        im.b.compute("=", &f(&part(1, "_i1"), 0), &[], t, vec![batch, hidden]);
                    let o = 2 * hidden;
                    let input = format!(
                        "{}({step}, _i0, {o} + _i1) + {}({d}, {o} + _i1)",
                        xw.name, bias.name
                    );
                    let candidate = if linear_before_reset {
                        format!(
                        "{input} + {}(_i0, _i1) * ({}(_i0, {o} + _i1) + {}({d}, {gh} + {o} + _i1))",
                        rg.name, hr.name, bias.name
                    )
                    } else {
                        let rh = im.b.compute(
                            "+=!",
                            &format!(
                                "{}(_i0, _k) * {} * {}({d}, {o} + _i1, _k)",
                                rg.name,
                                prev(h, &h0, "_i0", "_k"),
                                r.name
                            ),
                            &[format!("_k in 0:{hidden}")],
                            t,
                            vec![batch, hidden],
                        );
                        format!(
                            "{input} + {}(_i0, _i1) + {}({d}, {gh} + {o} + _i1)",
                            rh.name, bias.name
                        )
                    };
                    let hc = f(&candidate, 1);
                    im.b.compute(
                        "=",
                        &format!("(1 - {z}) * {hc} + {z} * {hp}"),
                        &[],
                        t,
                        vec![batch, hidden],
                    )
                }
                _ => {
                    let cp = prev(
                        c,
                        c0.as_ref().expect("an LSTM has a cell state"),
                        "_i0",
                        "_i1",
                    );
                    let p = |k: usize| format!("{}({d}, {} + _i1)", peephole.name, k * hidden);
                    let i = f(&format!("{} + {} * {cp}", part(0, "_i1"), p(0)), 0);
                    let fg = f(&format!("{} + {} * {cp}", part(2, "_i1"), p(2)), 0);
                    let cc = f(&part(3, "_i1"), 1);
                    let cell = im.b.compute(
                        "=",
                        &format!("{fg} * {cp} + {i} * {cc}"),
                        &[],
                        t,
                        vec![batch, hidden],
                    );
                    let ct = format!("{}(_i0, _i1)", cell.name);
                    let o = f(&format!("{} + {} * {ct}", part(1, "_i1"), p(1)), 0);
                    next_c = Some(cell);
                    im.b.compute(
                        "=",
                        &format!("{o} * {}", f(&ct, 2)),
                        &[],
                        t,
                        vec![batch, hidden],
                    )
                }
            };
            (next, next_c)
        };
        if steps <= MOST_STEPS {
            let mut h: Option<Var> = None;
            let mut c: Option<Var> = None;
            let mut hs: Vec<Var> = Vec::new();
            for s in 0..steps {
                let step = if reverse { steps - 1 - s } else { s };
                let (next, next_c) = cell(im, &xw, &step.to_string(), &h, &c);
                h = Some(next.clone());
                c = next_c.or(c);
                hs.push(next);
            }
            // The states in sequence order.
            if reverse {
                hs.reverse();
            }
            last_h.push(h.expect("a sequence has a step"));
            last_c.extend(c);
            every.push(Sequence::Steps(hs));
            continue;
        }
        // A longer sequence is a loop carrying the states and the
        // sequence of hidden states so far, which each step writes its
        // position of.
        let initial = |im: &mut Importer, v: &Var| {
            im.b.compute(
                "=",
                &state_at(v, d, "_i0", "_i1"),
                &[],
                t,
                vec![batch, hidden],
            )
        };
        let state = [batch, hidden];
        let mut carried = vec![(im.b.fresh("h"), initial(im, &h0), state.to_vec())];
        if let Some(c0) = &c0 {
            carried.push((im.b.fresh("c"), initial(im, c0), state.to_vec()));
        }
        let sequence = vec![steps, batch, hidden];
        let none = zeros(im, "sequence", &sequence);
        carried.push((im.b.fresh("y"), none, sequence.clone()));
        let var = |name: &str, shape: &[usize]| Var {
            name: name.to_string(),
            dtype: t,
            shape: shape.to_vec(),
        };
        // The loop runs forward over the sequence, reversed first for
        // the reverse direction: its index in a subscript stays in range.
        let xw = if reverse {
            let flipped = format!("{}({} - _i0, _i1, _i2)", xw.name, steps - 1);
            im.b.compute("=", &flipped, &[], t, xw.shape.clone())
        } else {
            xw
        };
        let index = im.b.fresh("s");
        let (stmts, expected) = (im.b.stmts.len(), im.b.expected.len());
        let h = Some(var(&carried[0].0, &state));
        let c = c0.as_ref().map(|_| var(&carried[1].0, &state));
        let (next, next_c) = cell(im, &xw, &index, &h, &c);
        let step = if reverse {
            format!("{} - {index}", steps - 1)
        } else {
            index.clone()
        };
        let y = &carried[carried.len() - 1].0;
        let written = im.b.compute(
            "=",
            &format!(
                "_i0 == {step} ? {}(_i1, _i2) : {y}(_i0, _i1, _i2)",
                next.name
            ),
            &[],
            t,
            sequence.clone(),
        );
        // The body's tensors are not visible after the loop.
        let body: Vec<String> = im.b.stmts.drain(stmts..).collect();
        im.b.expected.truncate(expected);
        let yields: Vec<&str> = std::iter::once(next.name.as_str())
            .chain(next_c.as_ref().map(|v| v.name.as_str()))
            .chain([written.name.as_str()])
            .collect();
        let results: Vec<Var> = carried
            .iter()
            .map(|(_, _, shape)| var(&im.b.fresh("t"), shape))
            .collect();
        let carries: Vec<String> = carried
            .iter()
            .map(|(name, init, shape)| {
                let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
                format!("{}({}) {name} = {}", t.name(), dims.join(", "), init.name)
            })
            .collect();
        im.b.stmts.push(format!(
            "({}) = for {index} in 0:{steps} carry ({}) {{\n    {}\n    yield ({})\n  }}",
            results
                .iter()
                .map(|v| v.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            carries.join(", "),
            body.join("\n    "),
            yields.join(", ")
        ));
        im.b.expected.extend(results.iter().cloned());
        last_h.push(results[0].clone());
        if c0.is_some() {
            last_c.push(results[1].clone());
        }
        every.push(Sequence::Stacked(results[results.len() - 1].clone()));
    }
    // The last states, [dirs, batch, H] (or [batch, dirs, H]).
    let stack = |im: &mut Importer, parts: &[Var], outer: &str| {
        let rhs = parts
            .iter()
            .enumerate()
            .rev()
            .fold(String::new(), |acc, (k, v)| {
                let read = format!("{}(_b, _i2)", v.name);
                if acc.is_empty() {
                    read
                } else {
                    format!("{outer} == {k} ? {read} : ({acc})")
                }
            });
        let (shape, rhs) = if batch_first {
            (
                vec![batch, dirs, hidden],
                rhs.replace(outer, "_i1").replace("_b", "_i0"),
            )
        } else {
            (
                vec![dirs, batch, hidden],
                rhs.replace(outer, "_i0").replace("_b", "_i1"),
            )
        };
        im.b.compute("=", &rhs, &[], t, shape)
    };
    if n.outputs() > 0 && n.proto.output.first().is_some_and(|o| !o.is_empty()) {
        // Y: every step of every direction.
        let (shape, [si, di, bi, ui]) = if batch_first {
            (
                vec![batch, steps, dirs, hidden],
                ["_i1", "_i2", "_i0", "_i3"],
            )
        } else {
            (
                vec![steps, dirs, batch, hidden],
                ["_i0", "_i1", "_i2", "_i3"],
            )
        };
        let mut rhs = String::new();
        for (d, sequence) in every.iter().enumerate().rev() {
            let read = match sequence {
                Sequence::Steps(hs) => {
                    let mut read = String::new();
                    for (s, v) in hs.iter().enumerate().rev() {
                        let here = format!("{}({bi}, {ui})", v.name);
                        read = if read.is_empty() {
                            here
                        } else {
                            format!("{si} == {s} ? {here} : ({read})")
                        };
                    }
                    read
                }
                Sequence::Stacked(y) => format!("{}({si}, {bi}, {ui})", y.name),
            };
            rhs = if rhs.is_empty() {
                read
            } else {
                format!("{di} == {d} ? ({read}) : ({rhs})")
            };
        }
        let y = im.b.compute("=", &rhs, &[], t, shape);
        im.set(n, 0, Value::Var(y));
    }
    let yh = stack(im, &last_h, "_o");
    im.set(n, 1, Value::Var(yh));
    if lstm {
        let yc = stack(im, &last_c, "_o");
        im.set(n, 2, Value::Var(yc));
    }
    Ok(())
}
