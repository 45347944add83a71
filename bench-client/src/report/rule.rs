//! The report's section rules: a title centred in a line of `fill` characters.

const WIDTH: usize = 50;

pub(super) fn rule(title: &str, fill: char) -> String {
    if title.is_empty() {
        return fill.to_string().repeat(WIDTH);
    }
    let padding = WIDTH.saturating_sub(title.len() + 2);
    let left = padding / 2;
    format!(
        "{} {title} {}",
        fill.to_string().repeat(left),
        fill.to_string().repeat(padding - left)
    )
}
