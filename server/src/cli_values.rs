//! Parsers for the server's own command-line values (the engine's are in
//! `pagoda_engine::args`).

/// `0.1,0.5,1` → seconds, strictly increasing and finite.
pub fn parse_seconds_list(text: &str) -> Result<Vec<f64>, String> {
    let values = text
        .split(',')
        .map(|part| {
            part.trim()
                .parse::<f64>()
                .map_err(|_| format!("{part:?} is not a number of seconds"))
        })
        .collect::<Result<Vec<f64>, String>>()?;
    let increasing = values.windows(2).all(|w| w[0] < w[1]);
    if values.is_empty() || !increasing || values.iter().any(|v| !v.is_finite() || *v <= 0.0) {
        return Err(format!(
            "{text:?}: expected positive, strictly increasing seconds such as 0.1,0.5,1"
        ));
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_lists_must_increase() {
        assert_eq!(parse_seconds_list("0.1, 0.5,1"), Ok(vec![0.1, 0.5, 1.0]));
        assert!(parse_seconds_list("1,0.5").is_err());
        assert!(parse_seconds_list("").is_err());
        assert!(parse_seconds_list("0.1,inf").is_err());
    }
}
