//! Which use cases' jobs the workers of a pool claim, from `--pool` and the `pools` of
//! `--plugin-limits`: in the default pool, those of every use case not bound away from it;
//! in another, only those of the use cases bound to it.

use crate::config::{DEFAULT_POOL, JobLimits};
use crate::store::ClaimFilter;

pub(super) fn claim_filter(limits: &JobLimits, pool: &str) -> ClaimFilter {
    // The use cases bound to pools that include `pool` (`wanted`), or that do not.
    let bound = |wanted: bool| -> Vec<String> {
        let mut names: Vec<String> = limits
            .per_use_case
            .iter()
            .filter(|(_, overrides)| {
                overrides
                    .pools
                    .as_ref()
                    .is_some_and(|pools| pools.iter().any(|name| name == pool) == wanted)
            })
            .map(|(name, _)| name.clone())
            .collect();
        names.sort_unstable();
        names
    };
    if pool == DEFAULT_POOL {
        let away = bound(false);
        if away.is_empty() {
            ClaimFilter::All
        } else {
            ClaimFilter::Except(away)
        }
    } else {
        ClaimFilter::Only(bound(true))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::config::LimitOverrides;
    use crate::runtime::Limits;

    fn limits(pools: &[(&str, Option<&[&str]>)]) -> JobLimits {
        let per_use_case: HashMap<String, LimitOverrides> = pools
            .iter()
            .map(|(name, pools)| {
                let overrides = LimitOverrides {
                    pools: pools.map(|pools| pools.iter().map(|pool| pool.to_string()).collect()),
                    ..LimitOverrides::default()
                };
                (name.to_string(), overrides)
            })
            .collect();
        JobLimits {
            default_time_limit: Duration::from_secs(10),
            max_time_limit: Duration::from_secs(60),
            sandbox: Limits::default(),
            max_attempts: 3,
            lease: Duration::from_secs(30),
            per_use_case: Arc::new(per_use_case),
        }
    }

    #[test]
    fn a_pool_claims_only_the_use_cases_bound_to_it() {
        let none = limits(&[("small", None)]);
        assert_eq!(claim_filter(&none, DEFAULT_POOL), ClaimFilter::All);
        let bound = limits(&[
            ("big", Some(&["bigmem"])),
            ("both", Some(&["default", "bigmem"])),
            ("gpu", Some(&["gpu"])),
            ("small", None),
        ]);
        assert_eq!(
            claim_filter(&bound, DEFAULT_POOL),
            ClaimFilter::Except(vec!["big".into(), "gpu".into()])
        );
        assert_eq!(
            claim_filter(&bound, "bigmem"),
            ClaimFilter::Only(vec!["big".into(), "both".into()])
        );
        assert_eq!(claim_filter(&bound, "idle"), ClaimFilter::Only(Vec::new()));
    }
}
