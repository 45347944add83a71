//! The source text as the module graph reads it: comments and test blocks dropped, `super::` inside
//! inline modules made `self::`, and the tokens of paths.

pub fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Drops `#[cfg(test)] mod name { … }` blocks.
pub fn without_test_blocks(code: &str) -> String {
    let mut kept = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        kept.push_str(&rest[..at]);
        let after = &rest[at..];
        let header_end = after.find(['{', ';']).unwrap_or(after.len());
        if after[..header_end].contains("mod ") && after[header_end..].starts_with('{') {
            let end =
                header_end + block_end(&after[header_end..]).unwrap_or(after.len() - header_end);
            rest = &after[end..];
        } else {
            kept.push_str("#[cfg(test)]");
            rest = &after["#[cfg(test)]".len()..];
        }
    }
    kept.push_str(rest);
    kept
}

/// Inside an inline `mod name { … }` (not a test module), `super::` is the file's own module:
/// written `self::` so that the file is not taken to name its parent.
pub fn inline_modules_as_self(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = find_inline_mod(rest) {
        let (before, block) = rest.split_at(at);
        out.push_str(before);
        let end = block_end(block).unwrap_or(block.len());
        out.push_str(&block[..end].replace("super::", "self::"));
        rest = &block[end..];
    }
    out.push_str(rest);
    out
}

/// Where the next `mod name {` starts.
fn find_inline_mod(code: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = code[from..].find("mod ") {
        let at = from + found;
        let word_start =
            at == 0 || !code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        let after: String = code[at + 4..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let tail = code[at + 4 + after.len()..].trim_start();
        if word_start && !after.is_empty() && tail.starts_with('{') {
            return Some(at);
        }
        from = at + 4;
    }
    None
}

/// The end (exclusive) of the first `{ … }` block in `code`.
fn block_end(code: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (offset, c) in code.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(offset + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Identifiers and the punctuation of paths (`::`, `{`, `}`, `,`); everything else is a break.
pub fn tokens(code: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(chars[start..i].iter().collect());
            continue;
        }
        if c == ':' && chars.get(i + 1) == Some(&':') {
            tokens.push("::".into());
            i += 2;
            continue;
        }
        if matches!(c, '{' | '}' | ',') {
            tokens.push(c.to_string());
        } else if !c.is_whitespace() {
            tokens.push(" ".into());
        }
        i += 1;
    }
    tokens
}
