//! hourglass
