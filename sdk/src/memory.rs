//! Whether an input fits the job's memory, asked before anything is built from it.

/// True if `bytes` more could be allocated now. In the sandbox a grow over the job's memory
/// cap is refused rather than trapped, so `validate` can turn an input too large to solve
/// into a violation at submission instead of a trap at run time:
///
/// ```
/// # let (variables, terms) = (1_000usize, 5_000usize);
/// let needed = variables.saturating_mul(64).saturating_add(terms.saturating_mul(80));
/// if !caseload_sdk::memory::fits(needed) {
///     // a violation at /num_variables: the model needs more memory than the job may use
/// }
/// ```
///
/// The estimate is the plugin's to make, from what its run allocates. Natively the answer is
/// the process allocator's, which may promise more than the machine has.
pub fn fits(bytes: usize) -> bool {
    let mut probe: Vec<u8> = Vec::new();
    probe.try_reserve_exact(bytes).is_ok()
}
