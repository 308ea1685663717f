//! File tests of the channel-blocked layout rewrite (`opt::layout`): every
//! `tests/files/layout/*.tc` starts with `# test: layout --def NAME --lanes
//! L --size SYM=N ...`, then a TC program, then `# expect:` and the
//! rewritten def as TC followed by the equivalence verifier's verdict on
//! the original against it at those sizes. The harness checks that the
//! rewritten program passes `ir::verify_program` and that its printed text
//! checks as TC again, and fails on any verdict but "equivalent", so every
//! rewrite the files show is proved. With `--constant NAME` (repeatable)
//! the rewritten def is then split at its load-time statements
//! (`opt::hoist`): the expectation shows the load def and the run def, and
//! the verifier proves the original equal to a def that calls the one and
//! then the other. `BLESS=1` rewrites expectations (`testkit::filetest`).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use testkit::filetest;

/// What a file's header asks for.
struct Header {
    def: String,
    lanes: i64,
    sizes: HashMap<String, i64>,
    constants: HashSet<String>,
}

/// `--def`, `--lanes`, `--size` and `--constant` from the header line.
fn header(text: &str) -> Result<Header, String> {
    let first = text.lines().next().unwrap_or("");
    let words: Vec<&str> = first
        .strip_prefix("# test: layout")
        .ok_or_else(|| format!("not a layout test: {first}"))?
        .split_whitespace()
        .collect();
    let (mut def, mut lanes, mut sizes) = (String::new(), 0, HashMap::new());
    let mut constants = HashSet::new();
    for w in words.chunks(2) {
        match w {
            ["--def", d] => def = d.to_string(),
            ["--lanes", l] => lanes = l.parse().map_err(|e| format!("--lanes: {e}"))?,
            ["--size", kv] => {
                let (k, v) = kv.split_once('=').ok_or("--size wants SYM=N")?;
                sizes.insert(k.to_string(), v.parse().map_err(|e| format!("{kv}: {e}"))?);
            }
            ["--constant", c] => {
                constants.insert(c.to_string());
            }
            other => return Err(format!("unexpected header words {other:?}")),
        }
    }
    Ok(Header {
        def,
        lanes,
        sizes,
        constants,
    })
}

fn check(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let Header {
        def: name,
        lanes,
        sizes,
        constants,
    } = header(&text)?;
    let original = tc::check_source(filetest::input(&text))
        .map_err(|d| format!("{d:?}"))?
        .program;
    let def = original.def(&name).ok_or(format!("no def `{name}`"))?;
    let Some(blocked) = opt::layout::block_channels(def, lanes, &sizes) else {
        return filetest::check_block(path, &text, "unchanged\n");
    };
    let mut program = original.clone();
    *program.defs.iter_mut().find(|d| d.name == name).unwrap() = blocked;
    ir::verify_program(&program).map_err(|e| format!("the rewrite does not verify: {e:?}"))?;
    let printed = ir::print_def(&program, program.def(&name).unwrap());
    tc::check_source(&ir::print_program(&program))
        .map_err(|d| format!("the printed rewrite does not check: {d:?}\n{printed}"))?;
    let options = opt::verify::Options {
        sizes,
        ..Default::default()
    };
    let report = opt::verify::verify(&original, &name, &program, &name, &options)?;
    let verdict = opt::verify::print_report(&report);
    if !report.equivalent() {
        return Err(format!(
            "the rewrite is not equivalent:\n{printed}\n{verdict}"
        ));
    }
    let mut actual = format!("{printed}\n{verdict}");
    if !constants.is_empty() {
        actual.push('\n');
        actual.push_str(&check_hoisted(
            &original, &program, &name, &constants, &options,
        )?);
    }
    filetest::check_block(path, &text, &actual)
}

/// Splits def `name` of `program` at its load-time statements, proves the
/// load def followed by the run def equal to `original`'s def, and
/// returns the two defs as TC and the verdict.
fn check_hoisted(
    original: &ir::Program,
    program: &ir::Program,
    name: &str,
    constants: &HashSet<String>,
    options: &opt::verify::Options,
) -> Result<String, String> {
    let def = program.def(name).unwrap();
    let load_name = format!("{name}_load");
    let hoisted =
        opt::hoist::hoist_constants(def, constants, &load_name).ok_or("no statement is hoisted")?;
    let run_name = format!("{name}_run");
    let split = ir::Program {
        defs: vec![
            hoisted.load.clone(),
            ir::Def {
                name: run_name.clone(),
                ..hoisted.run.clone()
            },
        ],
    };
    ir::verify_program(&split).map_err(|e| format!("the split does not verify: {e:?}"))?;
    let printed = ir::print_program(&split);
    // The original's signature, renamed, calling the one and then the other.
    let original_text = ir::print_def(original, original.def(name).unwrap());
    let signature = original_text.lines().next().unwrap().replacen(
        &format!("def {name}("),
        &format!("def {name}_composed("),
        1,
    );
    let names = |ps: &[ir::Param]| ps.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ");
    let composed = format!(
        "{printed}\n{signature}\n  ({}) = {load_name}({})\n  ({}) = {run_name}({})\n}}\n",
        hoisted.load.outputs.join(", "),
        names(&hoisted.load.params),
        hoisted.run.outputs.join(", "),
        names(&hoisted.run.params),
    );
    let checked = tc::check_source(&composed)
        .map_err(|d| format!("the composed program does not check: {d:?}\n{composed}"))?;
    let report = opt::verify::verify(
        original,
        name,
        &checked.program,
        &format!("{name}_composed"),
        options,
    )?;
    let verdict = opt::verify::print_report(&report);
    if !report.equivalent() {
        return Err(format!(
            "load then run is not the def:\n{composed}\n{verdict}"
        ));
    }
    Ok(format!("{printed}\n{verdict}"))
}

#[test]
fn layout_files() {
    let files = filetest::files(&testkit::root().join("tests/files/layout"), "tc");
    assert!(!files.is_empty());
    filetest::run_all("layout file tests", &files, check);
}
