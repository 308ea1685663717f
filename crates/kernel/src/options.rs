//! Kernel options: the choices the passes make for each step of a kernel,
//! as data (TC §6's mapping options). A pass that finds a step's choice set
//! takes it instead of its cost model's, and records what it took in the
//! record the pipeline returns, so that the default record of a kernel is
//! what the cost models chose and a search can change any part of it.
//!
//! A step is named as the pass that makes the choice sees it (the root's
//! child block, after the renames of the passes before it: `s1_mm`,
//! `s12_masks_1_vec`). The choices:
//! - `tile`: autotile's tiles, one line per cache level, outermost first,
//!   each `index=size` for the step's indices (an index left out keeps its
//!   whole range); `tile none` leaves the step untiled;
//! - `order i j k`: the order of the step's loops, outermost first: in
//!   each block of the step's nest (the step, a fused reduction in it),
//!   the free indices the list names run in the list's order, in the
//!   places they held; autotile's tiles then follow it, so it is the order
//!   of the tiles' loops and of the loops inside a tile;
//! - `vectorize on|off`: whether vectorize splits the step into vectors;
//! - `width N`: the lanes of its vectors (at most the target's width);
//! - `jam index=points... | jam none`: vectorize's register block: the
//!   output indices jammed with the lanes and their points, outermost
//!   first (`jam h=2 w=7`: two rows of seven columns, each point a vector
//!   of lanes);
//! - `parallel index | parallel none`: the index parallelize partitions;
//! - `unroll on|off|N`: whether unroll copies the step's small inner
//!   blocks, and the most points of a block it copies (`on`: its default,
//!   16);
//! - `fuse on|off`: whether fuse joins the step with the stage after it
//!   (named before fusing: `s1_O_init`);
//! - `forward on|off`: whether forward removes the step, a copy of one
//!   buffer into a temporary in another layout, by making the steps that
//!   read the temporary read the copy's source instead;
//! - `partitions N`: the runtime's partitions per thread of the pool, of a
//!   step's parallel index, or of a library matmul's product (its chunks
//!   of C).
//!
//! The text form: `step NAME` opens a step's choices, one per line after
//! it; `#` starts a comment. [`print_options`] and [`parse_options`] round
//! trip.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Every step's choices, by step name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    pub steps: BTreeMap<String, StepOptions>,
}

/// One step's choices; `None` leaves a choice to the pass's cost model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepOptions {
    /// Tiles per cache level, outermost first: each level's tile size by
    /// index name. Empty: untiled.
    pub tiles: Option<Vec<Vec<(String, u64)>>>,
    /// The loops' order, outermost first (see the module's doc).
    pub order: Option<Vec<String>>,
    pub vectorize: Option<bool>,
    /// The vectors' lanes.
    pub width: Option<u64>,
    /// The indices jammed with the vector lanes and their points,
    /// outermost first; empty: none.
    pub jam: Option<Vec<(String, u64)>>,
    /// The index partitioned over the cores, or none.
    pub parallel: Option<Option<String>>,
    /// The most points of a block unroll copies (0: none).
    pub unroll: Option<u64>,
    /// Whether fuse joins the step with the stage after it.
    pub fuse: Option<bool>,
    /// Whether forward makes the readers of the step's copy read its
    /// source.
    pub forward: Option<bool>,
    /// The runtime's partitions per thread (a parallel step's, a library
    /// matmul's chunks).
    pub partitions: Option<u64>,
}

impl Options {
    /// Step `name`'s choices (all unset when it has none).
    pub fn step(&self, name: &str) -> StepOptions {
        self.steps.get(name).cloned().unwrap_or_default()
    }

    /// Sets step `name`'s choices that `f` sets.
    pub fn record(&mut self, name: &str, f: impl FnOnce(&mut StepOptions)) {
        f(self.steps.entry(name.to_string()).or_default());
    }
}

/// `options` as text.
pub fn print_options(options: &Options) -> String {
    let mut out = String::new();
    for (name, s) in &options.steps {
        let _ = writeln!(out, "step {name}");
        if let Some(levels) = &s.tiles {
            if levels.is_empty() {
                out.push_str("  tile none\n");
            }
            for level in levels {
                let sizes: Vec<String> = level.iter().map(|(i, t)| format!("{i}={t}")).collect();
                let _ = writeln!(out, "  tile {}", sizes.join(" "));
            }
        }
        if let Some(order) = &s.order {
            let _ = writeln!(out, "  order {}", order.join(" "));
        }
        if let Some(v) = s.vectorize {
            let _ = writeln!(out, "  vectorize {}", on_off(v));
        }
        if let Some(n) = s.width {
            let _ = writeln!(out, "  width {n}");
        }
        match &s.jam {
            Some(jam) if jam.is_empty() => out.push_str("  jam none\n"),
            Some(jam) => {
                let points: Vec<String> = jam.iter().map(|(i, n)| format!("{i}={n}")).collect();
                let _ = writeln!(out, "  jam {}", points.join(" "));
            }
            None => {}
        }
        match &s.parallel {
            Some(Some(i)) => {
                let _ = writeln!(out, "  parallel {i}");
            }
            Some(None) => out.push_str("  parallel none\n"),
            None => {}
        }
        match s.unroll {
            Some(0) => out.push_str("  unroll off\n"),
            Some(crate::passes::unroll::MAX_POINTS) => out.push_str("  unroll on\n"),
            Some(n) => {
                let _ = writeln!(out, "  unroll {n}");
            }
            None => {}
        }
        if let Some(f) = s.fuse {
            let _ = writeln!(out, "  fuse {}", on_off(f));
        }
        if let Some(f) = s.forward {
            let _ = writeln!(out, "  forward {}", on_off(f));
        }
        if let Some(n) = s.partitions {
            let _ = writeln!(out, "  partitions {n}");
        }
    }
    out
}

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// Parses the text form; the error names the line and what is wrong there.
pub fn parse_options(text: &str) -> Result<Options, String> {
    let mut options = Options::default();
    let mut current: Option<String> = None;
    for (k, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at = |m: String| format!("line {}: {m}", k + 1);
        let mut words = line.split_whitespace();
        let key = words.next().unwrap_or("");
        let rest: Vec<&str> = words.collect();
        if key == "step" {
            let [name] = rest.as_slice() else {
                return Err(at("`step` takes one step name".to_string()));
            };
            if options.steps.contains_key(*name) {
                return Err(at(format!("step `{name}` is given twice")));
            }
            options
                .steps
                .insert(name.to_string(), StepOptions::default());
            current = Some(name.to_string());
            continue;
        }
        let Some(name) = &current else {
            return Err(at(format!("`{key}` comes before any `step` line")));
        };
        let step = options
            .steps
            .get_mut(name)
            .expect("inserted at its `step` line");
        match key {
            "tile" => {
                let levels = step.tiles.get_or_insert_with(Vec::new);
                if rest == ["none"] {
                    if !levels.is_empty() {
                        return Err(at("`tile none` after tiles of the same step".to_string()));
                    }
                    continue;
                }
                let level = rest
                    .iter()
                    .map(|w| sized(w).map_err(&at))
                    .collect::<Result<Vec<_>, _>>()?;
                if level.is_empty() {
                    return Err(at("`tile` takes `index=size` pairs or `none`".to_string()));
                }
                levels.push(level);
            }
            "order" => {
                if rest.is_empty() || !rest.iter().all(|i| is_name(i)) {
                    return Err(at("`order` takes index names".to_string()));
                }
                if let Some(i) = repeated(rest.iter().copied()) {
                    return Err(at(format!("`order` names `{i}` twice")));
                }
                step.order = Some(rest.iter().map(|i| i.to_string()).collect());
            }
            "vectorize" => step.vectorize = Some(switch(&rest).map_err(&at)?),
            "width" => step.width = Some(positive("width", &rest).map_err(&at)?),
            "unroll" => {
                step.unroll = Some(match rest.as_slice() {
                    ["on"] => crate::passes::unroll::MAX_POINTS,
                    ["off"] => 0,
                    _ => positive("unroll", &rest)
                        .map_err(|_| at("`unroll` takes `on`, `off` or the most points of a block it copies".to_string()))?,
                });
            }
            "fuse" => step.fuse = Some(switch(&rest).map_err(&at)?),
            "forward" => step.forward = Some(switch(&rest).map_err(&at)?),
            "jam" => {
                if rest.is_empty() {
                    return Err(at("`jam` takes `index=points` pairs or `none`".to_string()));
                }
                let jam = if rest == ["none"] {
                    Vec::new()
                } else {
                    rest.iter()
                        .map(|w| sized(w).map_err(&at))
                        .collect::<Result<Vec<_>, _>>()?
                };
                if let Some(i) = repeated(jam.iter().map(|(i, _)| i.as_str())) {
                    return Err(at(format!("`jam` names `{i}` twice")));
                }
                step.jam = Some(jam);
            }
            "parallel" => {
                step.parallel = Some(match rest.as_slice() {
                    ["none"] => None,
                    [i] if is_name(i) => Some(i.to_string()),
                    _ => return Err(at("`parallel` takes an index name or `none`".to_string())),
                });
            }
            "partitions" => step.partitions = Some(positive("partitions", &rest).map_err(&at)?),
            other => {
                return Err(at(format!(
                    "unknown choice `{other}` (choices: tile, order, vectorize, width, jam, parallel, unroll, fuse, forward, partitions)"
                )))
            }
        }
    }
    Ok(options)
}

/// The first name `names` gives a second time.
fn repeated<'a>(names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let mut seen = std::collections::HashSet::new();
    names.into_iter().find(|n| !seen.insert(*n))
}

/// The one positive number choice `key` takes.
fn positive(key: &str, rest: &[&str]) -> Result<u64, String> {
    match rest {
        [n] => n
            .parse()
            .ok()
            .filter(|&n: &u64| n > 0)
            .ok_or_else(|| format!("`{key}` takes a positive number, not `{n}`")),
        _ => Err(format!("`{key}` takes a positive number")),
    }
}

/// `index=size` with a positive size.
fn sized(w: &str) -> Result<(String, u64), String> {
    let bad = || format!("`{w}` is not `index=size` with a positive size");
    let (i, n) = w.split_once('=').ok_or_else(bad)?;
    let n: u64 = n.parse().map_err(|_| bad())?;
    if !is_name(i) || n == 0 {
        return Err(bad());
    }
    Ok((i.to_string(), n))
}

fn switch(rest: &[&str]) -> Result<bool, String> {
    match rest {
        ["on"] => Ok(true),
        ["off"] => Ok(false),
        _ => Err("expected `on` or `off`".to_string()),
    }
}

fn is_name(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}
