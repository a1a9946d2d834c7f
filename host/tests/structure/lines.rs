//! The size measure: lines of code a source file holds before its tests.

/// The most lines of code a source file may hold before its tests.
pub const LIMIT: usize = 500;

/// Lines of code in `text` before its tests: lines neither blank nor a `//` comment, up to the
/// first `#[cfg(test)]` that opens a module (the tests). A `#[cfg(test)]` on a lone helper
/// does not end the count, so it cannot hide the rest of a file.
pub fn code_lines_before_tests(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let end = lines
        .iter()
        .enumerate()
        .position(|(i, line)| *line == "#[cfg(test)]" && opens_module(&lines[i + 1..]))
        .unwrap_or(lines.len());
    lines[..end]
        .iter()
        .filter(|line| !line.is_empty() && !line.starts_with("//"))
        .count()
}

/// Whether the item after an attribute is a module: the first line that is not another
/// attribute or a comment declares `mod`.
fn opens_module(rest: &[&str]) -> bool {
    rest.iter()
        .find(|line| !line.is_empty() && !line.starts_with("#[") && !line.starts_with("//"))
        .is_some_and(|line| {
            let item = line.strip_prefix("pub ").unwrap_or(line);
            let item = item
                .strip_prefix("pub(crate) ")
                .or_else(|| item.strip_prefix("pub(super) "))
                .unwrap_or(item);
            item.starts_with("mod ")
        })
}

#[test]
fn blank_and_comment_lines_do_not_count() {
    let text = "//! A module.\n\n/// An item.\nfn a() {\n    // why\n    b();\n}\n";
    assert_eq!(code_lines_before_tests(text), 3);
}

#[test]
fn the_tests_module_ends_the_count() {
    let text = "fn a() {}\n#[cfg(test)]\n#[allow(dead_code)]\nmod tests {\n    fn t() {}\n}\n";
    assert_eq!(code_lines_before_tests(text), 1);
    assert_eq!(
        code_lines_before_tests("fn a() {}\n#[cfg(test)]\nmod tests;\n"),
        1
    );
}

#[test]
fn a_test_only_helper_does_not_end_the_count() {
    let text = "#[cfg(test)]\nfn helper() {}\nfn a() {}\n#[cfg(test)]\nmod tests {}\n";
    assert_eq!(code_lines_before_tests(text), 3);
}
