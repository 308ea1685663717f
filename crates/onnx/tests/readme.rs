//! The README's list of the operators and operator sets tessera imports
//! is the one `onnx::operators` writes from the importers' table, between
//! the README's markers; `BLESS=1` rewrites it there.

use std::path::Path;

const BEGIN: &str =
    "<!-- onnx-operators: begin (BLESS=1 cargo test -p onnx --test readme writes this list) -->\n";
const END: &str = "<!-- onnx-operators: end -->";

#[test]
fn the_readme_lists_the_operators_the_importers_implement() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let start = text.find(BEGIN).expect("the README has the begin marker") + BEGIN.len();
    let end = start
        + text[start..]
            .find(END)
            .expect("the README has the end marker");
    let want = onnx::operators();
    if testkit::filetest::blessing() {
        let blessed = format!("{}{want}{}", &text[..start], &text[end..]);
        std::fs::write(&path, blessed).unwrap();
        return;
    }
    let have = &text[start..end];
    assert!(
        have == want,
        "the README's operator list differs from the importers' (run BLESS=1 cargo test -p onnx --test readme):\n{}",
        testkit::filetest::diff(have, &want)
    );
}
