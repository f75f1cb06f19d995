// Names shared by the dev plane's scripts (devControlPlane.ts starts devNode.ts).

/** The Node the dev plane's kubelet registers. */
export const DEV_NODE_NAME = 'hermes-dev-node';
/** Written into the dev plane's state dir once its node runs; removed when it stops. */
export const DEV_NODE_READY = 'node.ready';
