//! darkbuf's own load generator, sink and prober (not built yet).
