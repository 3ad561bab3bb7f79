//! (room `compile`; see ARCHITECTURE.md)
