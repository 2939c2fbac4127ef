use super::*;

fn n(s: &str) -> Numeric {
    Numeric::parse(s).unwrap()
}

#[test]
fn text_reads_and_prints_as_postgres() {
    for (input, want) in [
        ("0", "0"),
        ("  -1.50 ", "-1.50"),
        ("+.5", "0.5"),
        ("5.", "5"),
        ("1.5e3", "1500"),
        ("1e-3", "0.001"),
        ("-0.00", "0.00"),
        ("NaN", "NaN"),
        ("nan", "NaN"),
        ("-inf", "-Infinity"),
        ("+Infinity", "Infinity"),
        (
            "123456789012345678901234567890.123",
            "123456789012345678901234567890.123",
        ),
        (
            "-0.000000000000000000000000000000001",
            "-0.000000000000000000000000000000001",
        ),
    ] {
        assert_eq!(n(input).to_string(), want, "{input}");
    }
    for bad in ["", ".", "1.2.3", "1e", "e5", "-nan", "1 2", "0x10"] {
        assert_eq!(Numeric::parse(bad), Err(NumError::Syntax), "{bad}");
    }
    assert_eq!(Numeric::parse("1e200000"), Err(NumError::Overflow));
    assert_eq!(Numeric::parse("1e-20000"), Err(NumError::Overflow));
    assert!(Numeric::parse(&format!("1{}", "0".repeat(131_071))).is_ok());
    assert_eq!(
        Numeric::parse(&format!("1{}", "0".repeat(131_072))),
        Err(NumError::Overflow)
    );
}

#[test]
fn arithmetic_takes_postgres_scales() {
    let op = |a: &str, f: fn(&Numeric, &Numeric) -> Result<Numeric, NumError>, b: &str| {
        f(&n(a), &n(b)).map(|v| v.to_string())
    };
    assert_eq!(op("1.5", Numeric::add, "2.25").unwrap(), "3.75");
    assert_eq!(
        op("9223372036854775807", Numeric::add, "1").unwrap(),
        "9223372036854775808"
    );
    assert_eq!(op("1.50", Numeric::sub, "0.5").unwrap(), "1.00");
    assert_eq!(op("1.5", Numeric::mul, "2.25").unwrap(), "3.375");
    assert_eq!(
        op("1", Numeric::div, "3").unwrap(),
        "0.33333333333333333333"
    );
    assert_eq!(op("10", Numeric::div, "3").unwrap(), "3.3333333333333333");
    assert_eq!(op("2", Numeric::div, "1").unwrap(), "2.0000000000000000");
    assert_eq!(
        op("100000", Numeric::div, "3").unwrap(),
        "33333.333333333333"
    );
    assert_eq!(op("-7", Numeric::div, "2").unwrap(), "-3.5000000000000000");
    assert_eq!(op("-7.5", Numeric::rem, "2").unwrap(), "-1.5");
    assert_eq!(op("7", Numeric::div_trunc, "-2").unwrap(), "-3");
    assert_eq!(op("1", Numeric::div, "0"), Err(NumError::DivisionByZero));
    assert_eq!(
        op("Infinity", Numeric::div, "0"),
        Err(NumError::DivisionByZero)
    );
    assert_eq!(op("Infinity", Numeric::sub, "Infinity").unwrap(), "NaN");
    assert_eq!(op("Infinity", Numeric::mul, "0").unwrap(), "NaN");
    assert_eq!(op("-Infinity", Numeric::mul, "-2").unwrap(), "Infinity");
    assert_eq!(op("5", Numeric::div, "-Infinity").unwrap(), "0");
    assert_eq!(op("NaN", Numeric::add, "1").unwrap(), "NaN");
    assert_eq!(op("5", Numeric::rem, "Infinity").unwrap(), "5");
}

#[test]
fn rounding_is_half_away_from_zero() {
    assert_eq!(n("2.5").round(0).to_string(), "3");
    assert_eq!(n("-2.5").round(0).to_string(), "-3");
    assert_eq!(n("1234.5678").round(-2).to_string(), "1200");
    assert_eq!(n("1234.5678").round(2).to_string(), "1234.57");
    assert_eq!(n("1234.5678").trunc(2).to_string(), "1234.56");
    assert_eq!(n("1.5").round(3).to_string(), "1.500");
    assert_eq!(n("-1.5").floor().to_string(), "-2");
    assert_eq!(n("-1.5").ceil().to_string(), "-1");
    assert_eq!(
        n("99.995").fit(4, 2).map(|v| v.to_string()),
        Err(
            "A field with precision 4, scale 2 must round to an absolute value less than 10^2."
                .into()
        )
    );
    assert_eq!(
        n("0.95").fit(1, 1).unwrap_err(),
        "A field with precision 1, scale 1 must round to an absolute value less than 1."
    );
    assert_eq!(n("12.345").fit(5, 2).unwrap().to_string(), "12.35");
}

#[test]
fn order_equality_and_hash_are_numeric() {
    use std::collections::hash_map::DefaultHasher;
    let h = |v: &Numeric| {
        let mut s = DefaultHasher::new();
        v.hash(&mut s);
        s.finish()
    };
    assert_eq!(n("1.50"), n("1.5"));
    assert_eq!(h(&n("1.50")), h(&n("1.5")));
    assert_eq!(h(&n("100000000000000000000.000")), h(&n("1e20")));
    let mut v: Vec<Numeric> = [
        "NaN",
        "Infinity",
        "-Infinity",
        "0",
        "-1e30",
        "1e30",
        "0.001",
        "-0.5",
    ]
    .iter()
    .map(|s| n(s))
    .collect();
    v.sort();
    let text: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    assert_eq!(
        text,
        [
            "-Infinity",
            "-1000000000000000000000000000000",
            "-0.5",
            "0",
            "0.001",
            "1000000000000000000000000000000",
            "Infinity",
            "NaN"
        ]
    );
    let keys: Vec<Vec<u8>> = v.iter().map(|x| x.key_bytes()).collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
    for x in &v {
        let mut b = Vec::new();
        x.encode(&mut b);
        let back = Numeric::decode(&b).unwrap();
        assert_eq!(back.to_string(), x.to_string());
    }
}

#[test]
fn division_scale_follows_base_10000_weights() {
    assert_eq!(n("0").div_scale(&n("1")), 20);
    assert_eq!(n("12345").base10000_lead(), (1, 1));
    assert_eq!(n("0.00012").base10000_lead(), (-1, 1));
    assert_eq!(n("0.0012").base10000_lead(), (-1, 12));
}

#[test]
fn trailing_zeros_strip_in_few_steps() {
    let one = n(&format!("1.{}", "0".repeat(16_383)));
    assert_eq!(one.stripped().to_string(), "1");
    assert_eq!(one.min_scale(), 0);
    let x = n(&format!(
        "123456789012345678901234567890.0070{}",
        "0".repeat(16_000)
    ));
    assert_eq!(
        x.stripped().to_string(),
        "123456789012345678901234567890.007"
    );
    assert_eq!(x.min_scale(), 3);
    assert_eq!(n("-12.500").stripped().to_string(), "-12.5");
    assert_eq!(n("100").stripped().to_string(), "100");
}
