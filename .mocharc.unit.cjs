// `npm run test:unit`: the pure and in-process tests of .mocharc.json, without the ones that
// start processes (the gateway, npm, the key CLI, esbuild, codegen), redis-server or a browser.
module.exports = {
  ...require('./.mocharc.json'),
  ignore: [
    'test/e2e/**',
    'test/deploy/productionRun.test.ts',
    'test/docs/**',
    'test/generated/**',
    'test/bench/compiledGateway.test.ts',
    'test/lifecycle/batchedLogLines.test.ts',
    'test/lifecycle/shutdownProcess.test.ts',
    'test/lifecycle/startupFailures.test.ts',
    'test/local/keysCli.test.ts',
    'test/local/upstreamsCli.test.ts',
    'test/telemetry/tracing.test.ts',
    'test/limits/admissionScript.test.ts',
    'test/limits/redisCluster.test.ts',
    'test/limits/redisFailover.test.ts',
    'test/limits/redisLimiter.test.ts',
    'test/limits/refunds.test.ts',
    'test/redis/redisAccess.test.ts',
    'test/redis/silentRedis.test.ts',
    'test/usage/ceilingChange.test.ts',
    'test/usage/sharedCeiling.test.ts',
    'test/usage/redisClusterUsage.test.ts',
    'test/usage/redisUsageBuffer.test.ts',
    'test/usage/usageSpool.test.ts',
    'test/usage/usageRedisProcess.test.ts',
  ],
  reporter: 'dot',
  // Files run in four worker processes: most of these tests wait on sockets and timers
  // rather than compute, so even two cores finish them in about half the time.
  parallel: true,
  jobs: 4,
};
