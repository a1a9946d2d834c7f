//! weir's default endpoint policy: upstream kube-controller-manager's endpoint controller
//! (`syncService`), as specified rule by rule in the project's upstream reference. All logic
//! lives in the `weir-policy` crate; this crate only exports it as a component.

weir_policy::export_policy!(weir_policy::DefaultPolicy);
weir_policy::arena_allocator!();
