// Every scenario, in the order `make chaos` runs them.
import type { Scenario } from '../scenario.js';
import { fuzz } from './fuzz.js';
import { gatewayKill } from './gateway-kill.js';
import { halfOpen } from './half-open.js';
import { postgresOutage, postgresRestart } from './postgres.js';
import { redisFlush, redisRestart } from './redis.js';
import { redisHalfOpen } from './redis-half-open.js';
import { stampede } from './stampede.js';
import { workerKill } from './worker-kill.js';

export const scenarios: Scenario[] = [stampede, workerKill, gatewayKill, redisFlush, redisRestart, postgresRestart, postgresOutage, halfOpen, redisHalfOpen, fuzz];
