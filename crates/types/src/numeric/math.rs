//! numeric's functions beyond arithmetic: sqrt, exp, ln, log, power, factorial,
//! at PostgreSQL's result scales.
