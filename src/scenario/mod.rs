//! (room `scenario`; see ARCHITECTURE.md)
