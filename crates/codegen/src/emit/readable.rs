//! The whole program as one readable C file ([`super::CProgram::source`],
//! what `tessera run --emit c` writes): a comment listing the buffers and,
//! step by step, the function each step calls with which buffers; the
//! prelude once; `PREFIX_abi` of all the functions; and every distinct
//! function once, with the comments of the first step that calls it (its
//! block, comprehension and nested blocks). It compiles on its own into
//! an object that `crate::load::Kernel::load` accepts.

use std::fmt::Write as _;

use kernel::{Block, RefDir};

use super::dedup::Distinct;
use super::func::{arg_name, comment_text};
use super::{abi, scalar, units, BufferInfo, StepInfo};

/// The readable C of a program: `root`, whose step blocks are `blocks`.
pub(super) fn source(
    root: &Block,
    blocks: &[&Block],
    prefix: &str,
    buffers: &[BufferInfo],
    steps: &[StepInfo],
    distinct: &[Distinct],
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "/* tessera: kernel {} as C (symbols {prefix}_*): {} calling {} distinct\n \
         * function{}.",
        comment_text(&root.name),
        count(steps.len(), "step"),
        distinct.len(),
        if distinct.len() == 1 { "" } else { "s" },
    );
    let _ = writeln!(s, " * Buffers:");
    for (k, b) in buffers.iter().enumerate() {
        let _ = writeln!(
            s,
            " *   {k}: {} {}[{}], {}{}",
            comment_text(&b.name),
            b.dtype,
            b.len,
            dir_text(b.dir),
            if b.temp { ", temporary" } else { "" }
        );
    }
    let _ = writeln!(
        s,
        " * Steps, in the order they run, each a call with its buffers as args[0], args[1], ...:"
    );
    for (k, step) in steps.iter().enumerate() {
        let args: Vec<String> = step
            .args
            .iter()
            .map(|&a| comment_text(&buffers[a].name))
            .collect();
        let _ = writeln!(
            s,
            " *   {k}: block {} calls {}({})",
            comment_text(&step.block),
            distinct[step.function].function.symbol,
            args.join(", ")
        );
    }
    s.push_str(" */\n");
    s.push_str(scalar::PRELUDE);
    if distinct.iter().any(|d| d.function.avx512) {
        s.push_str(scalar::PRELUDE_AVX512);
    }
    s.push_str(&units::abi_line(
        prefix,
        &abi(distinct.iter().map(|d| &d.function)),
    ));
    let mut callers = vec![0usize; distinct.len()];
    for step in steps {
        callers[step.function] += 1;
    }
    for (d, callers) in distinct.iter().zip(callers) {
        let k = d.first_step;
        s.push('\n');
        s.push_str(&step_header(k, &root.name, blocks[k], steps[k].parallel));
        let args: Vec<String> = steps[k]
            .args
            .iter()
            .enumerate()
            .map(|(j, &a)| format!("{} is {}", arg_name(j), comment_text(&buffers[a].name)))
            .collect();
        if !args.is_empty() {
            let _ = writeln!(s, " * In step {k}, {}.", args.join(", "));
        }
        let _ = writeln!(s, " * Called by {}.\n */", count(callers, "step"));
        s.push_str(&d.readable);
    }
    s
}

/// The comment above the function of step `k`, but for its last line.
fn step_header(k: usize, root: &str, b: &Block, parallel: Option<u64>) -> String {
    let tags: Vec<String> = b.tags.iter().map(|t| format!(" #{t}")).collect();
    let mut s = format!(
        "/* Step {k} of {}: block {}{}\n",
        comment_text(root),
        comment_text(&b.name),
        comment_text(&tags.join(""))
    );
    if !b.comment.is_empty() {
        let _ = writeln!(s, " * {}", comment_text(&b.comment));
    }
    match (
        parallel,
        b.idxs.iter().find(|i| i.tags.contains("parallel")),
    ) {
        (Some(range), Some(ix)) => {
            let _ = writeln!(
                s,
                " * Runs lo <= {} < hi of its parallel index (range {range}).",
                comment_text(&ix.name)
            );
        }
        _ => s.push_str(" * Runs every point; lo and hi are unused.\n"),
    }
    s
}

/// `1 step`, `2 steps`.
fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

fn dir_text(d: RefDir) -> &'static str {
    match d {
        RefDir::None => "none",
        RefDir::In => "in",
        RefDir::Out => "out",
        RefDir::InOut => "inout",
    }
}
