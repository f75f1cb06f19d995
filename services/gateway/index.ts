// The public surface of services/gateway.
export { buildGatewayApp } from './app.js';
export { startGateway, type RunningGateway } from './server.js';
export { openGatewayDeps, type GatewayDeps, type GatewayTuning } from './deps.js';
export { admittedBy, apiSessionKey, apiUser } from './admission.js';
