//! Numbers as error messages show them: as written for everyday values, in scientific notation
//! once they are huge (`1e308`, not its 309 digits).

/// `x` for a message: `1100`, `0.5`, `1e308`.
pub fn show_number(x: f64) -> String {
    if x.is_finite() && x.abs() >= 1e15 {
        format!("{x:e}")
    } else {
        x.to_string()
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::numbers::show_number;

    #[test]
    fn huge_numbers_are_short() {
        assert_eq!(show_number(1100.0), "1100");
        assert_eq!(show_number(0.5), "0.5");
        assert_eq!(show_number(1e308), "1e308");
        assert_eq!(show_number(-2.5e20), "-2.5e20");
    }
}
