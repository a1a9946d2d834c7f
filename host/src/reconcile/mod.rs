//! One sync's pure parts, shared by the controller and the case runner: checking a guest's
//! decision and turning it into the objects to write.

pub mod slices;
