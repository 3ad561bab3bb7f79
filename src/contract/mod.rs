//! (room `contract`; see ARCHITECTURE.md)
