import { startSharedUpstreams } from './sharedUpstreams.js';
import { seedTenants, type TenantGroup, tenantsOf, type UpstreamCounts, type UpstreamsRequest } from './tenants.js';

/**
 * The process startTenantUpstreams forks: the shared upstreams with every group's tenants seeded, answering the
 * test's questions over IPC. It ends with its parent.
 */
process.once('message', async ({ groups, verifyDelayMs }: { groups: TenantGroup[]; verifyDelayMs: number }) => {
  const organizations = [...new Set(groups.flatMap((group) => tenantsOf(group).map((t) => t.organizationId)))];
  const upstreams = await startSharedUpstreams('tenant upstreams', { organizations });
  seedTenants(upstreams.keyService, groups);
  upstreams.keyService.setVerifyDelay(verifyDelayMs);
  const answer = (id: number, result?: unknown) => process.send?.({ id, result });
  process.on('message', async (request: UpstreamsRequest) => {
    if (request.call === 'counts') {
      const usageByOrganization: Record<string, number> = {};
      for (const event of upstreams.keyService.usageEvents) {
        const id = String(event.organizationId);
        usageByOrganization[id] = (usageByOrganization[id] ?? 0) + 1;
      }
      const counts: UpstreamCounts = {
        verifyCalls: upstreams.keyService.verifyCalls(),
        usageEvents: upstreams.keyService.usageEvents.length,
        usageByOrganization,
        usageDuplicates: upstreams.keyService.usageDuplicates(),
      };
      answer(request.id, counts);
    } else if (request.call === 'setVerifyDelay') {
      upstreams.keyService.setVerifyDelay(request.ms);
      answer(request.id);
    } else if (request.call === 'holdPlatform') {
      if (request.hold) upstreams.platform.hold();
      else upstreams.platform.release();
      answer(request.id);
    } else if (request.call === 'refuseKeyService') {
      upstreams.keyService.refuseVerify(request.status);
      upstreams.keyService.refuseUsage(request.status);
      answer(request.id);
    } else {
      await upstreams.close();
      answer(request.id);
    }
  });
  process.send?.({ started: { env: upstreams.env, key: upstreams.key } });
});
process.on('disconnect', () => process.exit(0));
