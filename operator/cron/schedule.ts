// The schedule arithmetic lives in core (the scheduler in the workers uses it too).
export { checkTimeZone, nextRun, parseSchedule, ScheduleError } from '../../services/core/index.js';
