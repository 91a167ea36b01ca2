//! The physical plans one run of a query executes, kept so that EXPLAIN ANALYZE can show
//! them after the run with the metrics their operators gathered. A query runs as one plan;
//! a run holds every plan it executes, in the order they ran.

use std::sync::{Arc, Mutex};

use datafusion::physical_plan::display::DisplayableExecutionPlan;
use datafusion::physical_plan::ExecutionPlan;

/// The plans of one run, shared by the run's parts.
#[derive(Clone, Default)]
pub(crate) struct Stages(Arc<Mutex<Vec<Arc<dyn ExecutionPlan>>>>);

impl Stages {
    /// Notes that `plan` is about to run.
    pub(crate) fn record(&self, plan: &Arc<dyn ExecutionPlan>) {
        self.plans().push(plan.clone());
    }

    fn plans(&self) -> std::sync::MutexGuard<'_, Vec<Arc<dyn ExecutionPlan>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The plans as indented text with each operator's metrics (summed over its
    /// partitions), a heading per stage when there are several.
    pub(crate) fn render(&self) -> String {
        let plans = self.plans();
        let mut out = String::new();
        for (i, plan) in plans.iter().enumerate() {
            if plans.len() > 1 {
                out.push_str(&format!("Stage {} of {}:\n", i + 1, plans.len()));
            }
            let text = DisplayableExecutionPlan::with_metrics(plan.as_ref())
                .indent(true)
                .to_string();
            out.push_str(&text);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::physical_plan::empty::EmptyExec;

    #[test]
    fn several_stages_are_headed_in_the_order_they_ran() {
        let stages = Stages::default();
        assert_eq!(stages.render(), "");
        let empty: Arc<dyn ExecutionPlan> =
            Arc::new(EmptyExec::new(Arc::new(arrow::datatypes::Schema::empty())));
        stages.record(&empty);
        assert!(!stages.render().contains("Stage"));
        stages.record(&empty);
        let text = stages.render();
        let first = text.find("Stage 1 of 2").unwrap();
        let second = text.find("Stage 2 of 2").unwrap();
        assert!(first < second, "{text}");
        assert_eq!(text.matches("EmptyExec").count(), 2, "{text}");
    }
}
