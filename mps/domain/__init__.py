"""Pure business rules: no I/O, no clocks read behind the caller's back."""
