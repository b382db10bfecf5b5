//! Checkers as observers of the world.
//!
//! Contract: once per checker step the world drains every live broker's events
//! ([`mirrorsim::broker::Broker::take_events`]) into its [`BrokerView`] and hands the checkers a
//! [`Step`]: the simulated time, read-only views of the controllers and brokers, and the
//! workload's history. A [`Checker`] first sees every drained event once, broker by broker in
//! the world's node order and each broker's events in the order it reported them, then judges
//! the state the step left. Nothing a checker does can change a node: the views lend the state
//! machines immutably, so a check that passes or fails leaves the run exactly as it was.

use mirrorsim::broker::BrokerEvent;

use super::view::{BrokerView, ControllerView};
use super::Violation;
use crate::world::workload::History;

/// The world as one checker step sees it.
pub struct Step<'s, 'a> {
    /// Simulated time of the step, in milliseconds (the checkers' clock).
    pub time_ms: i64,
    /// Every live controller.
    pub controllers: &'s [ControllerView<'a>],
    /// Every live broker, each with the events drained from it for this step.
    pub brokers: &'s [BrokerView<'a>],
    /// What the clients did and saw so far.
    pub history: &'s History,
}

impl Step<'_, '_> {
    /// Every event drained this step with the broker that reported it, in the order checkers
    /// see them.
    pub fn events(&self) -> impl Iterator<Item = (&BrokerView<'_>, &BrokerEvent)> + '_ {
        self.brokers
            .iter()
            .flat_map(|view| view.events.iter().map(move |event| (view, event)))
    }
}

/// A family of invariants: learns from events, judges state.
pub trait Checker {
    /// Sees one event `view`'s broker reported, once, before this step's checks run.
    fn observe(&mut self, step: &Step<'_, '_>, view: &BrokerView<'_>, event: &BrokerEvent);

    /// Judges the state this step left, after all its events were observed; returns the
    /// safety violations found.
    fn check_step(&mut self, step: &Step<'_, '_>) -> Vec<Violation>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Checkers;
    use mirrorsim::broker::{Broker, BrokerConfig, MemoryStorage};
    use mirrorsim::protocol::{BrokerId, ClusterIndex, TopicPartition};

    fn broker(id: i32) -> Broker<MemoryStorage> {
        Broker::new(
            ClusterIndex(0),
            BrokerId(id),
            BrokerConfig::default(),
            MemoryStorage::new(),
            1,
            0,
        )
        .expect("an empty broker starts")
    }

    fn isr_changed(partition: i32) -> BrokerEvent {
        BrokerEvent::IsrChanged {
            topic_partition: TopicPartition::new("t", partition),
            isr: vec![BrokerId(1)],
        }
    }

    /// Remembers what it was shown, in order.
    #[derive(Default)]
    struct Recorder {
        seen: Vec<(BrokerId, i32)>,
        steps: usize,
    }

    impl Checker for Recorder {
        fn observe(&mut self, _step: &Step<'_, '_>, view: &BrokerView<'_>, event: &BrokerEvent) {
            let BrokerEvent::IsrChanged {
                topic_partition, ..
            } = event
            else {
                panic!("only ISR changes were drained: {event:?}");
            };
            self.seen
                .push((view.broker.broker_id(), topic_partition.partition));
        }

        fn check_step(&mut self, _step: &Step<'_, '_>) -> Vec<Violation> {
            self.steps += 1;
            Vec::new()
        }
    }

    #[test]
    fn events_reach_a_checker_broker_by_broker_in_reported_order() {
        let (first, second) = (broker(1), broker(2));
        let views = [
            BrokerView::new(
                ClusterIndex(0),
                1,
                &first,
                vec![isr_changed(3), isr_changed(1)],
                None,
            ),
            BrokerView::new(ClusterIndex(0), 1, &second, vec![isr_changed(2)], None),
        ];
        let history = History::default();
        let step = Step {
            time_ms: 10,
            controllers: &[],
            brokers: &views,
            history: &history,
        };
        let mut recorder = Recorder::default();
        for (view, event) in step.events() {
            recorder.observe(&step, view, event);
        }
        recorder.check_step(&step);
        assert_eq!(
            recorder.seen,
            vec![(BrokerId(1), 3), (BrokerId(1), 1), (BrokerId(2), 2)]
        );
        assert_eq!(recorder.steps, 1);
    }

    #[test]
    fn the_checkers_count_each_drained_event_once() {
        let broker = broker(1);
        let history = History::default();
        let mut checkers = Checkers::default();
        for events in [vec![isr_changed(0), isr_changed(1)], Vec::new()] {
            let views = [BrokerView::new(ClusterIndex(0), 1, &broker, events, None)];
            let violations = checkers.run_step(&Step {
                time_ms: 10,
                controllers: &[],
                brokers: &views,
                history: &history,
            });
            assert!(violations.is_empty(), "{violations:?}");
        }
        assert_eq!(checkers.marks.get("isr-changed"), Some(&2));
    }
}
