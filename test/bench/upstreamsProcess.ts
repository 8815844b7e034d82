import { startLocalUpstreams } from '../../src/local/startLocalUpstreams.js';
import { answerMemory, isParentMessage, reportFailure, type UpstreamsReady } from './childMessages.js';

/**
 * Bench child: the embedded local platform and key service in a process of their own,
 * so the gateway under test is measured alone (its CPU and memory, its event loop)
 * and talks to them over loopback HTTP as it would to the real upstreams.
 * argv[2]: the data directory (a temporary one, made by the parent).
 */
async function main(): Promise<void> {
  const dataDir = process.argv[2];
  if (!dataDir) throw new Error('usage: upstreamsProcess.ts <dataDir>');
  const upstreams = await startLocalUpstreams({ dataDir });
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    const force = setTimeout(() => process.exit(1), 5000);
    force.unref();
    void upstreams.close().finally(() => process.exit(0));
  };
  process.on('message', (message: unknown) => {
    if (!isParentMessage(message)) return;
    if (message.type === 'stop') stop();
    else answerMemory(message);
  });
  process.on('disconnect', stop);
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  const ready: UpstreamsReady = {
    type: 'ready',
    platform: upstreams.platform,
    keyService: upstreams.keyService,
    demoKey: upstreams.demoKey,
  };
  process.send?.(ready);
}

main().catch(reportFailure);
