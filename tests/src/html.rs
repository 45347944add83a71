//! What "self-contained" means for a generated HTML page, checked on its text.
//!
//! A page fetches something only through a reference a browser follows: an attribute that
//! loads (`src`, `srcset`, `href` to anything but an in-page `#anchor`, `action`, `poster`,
//! `data`, `xlink:href`), an element that loads or runs (`<link>`, `<script>`, `<iframe>`,
//! `<object>`, `<embed>`, `<base>`, `<meta http-equiv="refresh">`), a CSS `url(` or
//! `@import`, or script calling `fetch`/`XMLHttpRequest`. A URL shown as text (the benchmarked
//! server's `base_url` in a table cell) fetches nothing, so it is allowed — but only as text
//! between tags: any `://` inside a tag (an attribute value, a namespace such as SVG's `xmlns`)
//! is reported.

/// Every fetchable reference or URL-in-a-tag in `html`, described; empty when self-contained.
pub fn external_references(html: &str) -> Vec<String> {
    let lower = html.to_ascii_lowercase();
    let mut found = Vec::new();
    for needle in [
        " src=",
        " srcset=",
        " action=",
        " poster=",
        " data=",
        "xlink:href",
        "<link",
        "<script",
        "<iframe",
        "<object",
        "<embed",
        "<base",
        "http-equiv",
        "url(",
        "@import",
        "fetch(",
        "xmlhttprequest",
    ] {
        for (at, _) in lower.match_indices(needle) {
            found.push(format!("`{needle}` at byte {at}: {}", excerpt(html, at)));
        }
    }
    for (at, _) in lower.match_indices(" href=") {
        let value = lower[at + 6..].trim_start_matches(['"', '\'']);
        if !value.starts_with('#') {
            found.push(format!(
                "href not to an anchor at byte {at}: {}",
                excerpt(html, at)
            ));
        }
    }
    for (at, _) in html.match_indices("://") {
        if inside_tag(html, at) {
            found.push(format!(
                "URL inside a tag at byte {at}: {}",
                excerpt(html, at)
            ));
        }
    }
    found
}

/// Whether byte `at` lies inside a tag (after a `<` not yet closed by `>`).
fn inside_tag(html: &str, at: usize) -> bool {
    let before = &html[..at];
    match (before.rfind('<'), before.rfind('>')) {
        (Some(open), Some(close)) => open > close,
        (Some(_), None) => true,
        _ => false,
    }
}

fn excerpt(html: &str, at: usize) -> String {
    let mut start = at.saturating_sub(40);
    while !html.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (at + 60).min(html.len());
    while !html.is_char_boundary(end) {
        end += 1;
    }
    html[start..end].replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_urls_pass_and_fetches_are_caught() {
        let clean =
            "<p>server: http://127.0.0.1:8000</p><a href=\"#summary\">x</a><svg width=\"1\"></svg>";
        assert!(
            external_references(clean).is_empty(),
            "{:?}",
            external_references(clean)
        );
        for bad in [
            "<img src=\"x.png\">",
            "<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>",
            "<a href=\"https://example.com\">x</a>",
            "<style>body { background: url(x.png) }</style>",
            "<style>@import 'x.css';</style>",
            "<script>1</script>",
            "<link rel=\"stylesheet\" href=\"x.css\">",
        ] {
            assert!(!external_references(bad).is_empty(), "{bad} not caught");
        }
    }
}
