//! The files `run --out DIR` writes: one `.npy` per output, named after the
//! output but never following the name as a path. An output name comes
//! from the model (ONNX names are free text), so a name such as
//! `../../x` or `/etc/x` must not lead outside `DIR`: every character but
//! ASCII letters, digits, `_`, `-` and `.` becomes `_`, a leading `.`
//! (hidden files, `..`) gets a `_` in front, names are cut to 100
//! characters, and names that come out equal are told apart by `_2`, `_3`.

use std::collections::HashSet;

/// The longest file name stem written (file systems allow 255 bytes).
const MAX_STEM: usize = 100;

/// The file stem for each output name, in order, all different.
pub fn stems<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut taken = HashSet::new();
    names
        .into_iter()
        .map(|name| {
            let mut stem: String = name
                .chars()
                .map(|c| match c {
                    'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' | '.' => c,
                    _ => '_',
                })
                .take(MAX_STEM)
                .collect();
            if stem.is_empty() || stem.starts_with('.') {
                stem.insert(0, '_');
            }
            let mut unique = stem.clone();
            let mut k = 2;
            while !taken.insert(unique.clone()) {
                unique = format!("{stem}_{k}");
                k += 1;
            }
            unique
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::stems;

    #[test]
    fn names_become_safe_distinct_stems() {
        let got = stems([
            "y",
            "../../escaped",
            "/etc/passwd",
            "..",
            "",
            "a/b",
            "a_b",
            "onnx::Add_5",
            "ünï",
        ]);
        assert_eq!(
            got,
            [
                "y",
                "_.._.._escaped",
                "_etc_passwd",
                "_..",
                "_",
                "a_b",
                "a_b_2",
                "onnx__Add_5",
                "_n_"
            ]
        );
        assert_eq!(stems([&"x".repeat(300) as &str])[0].len(), 100);
    }
}
