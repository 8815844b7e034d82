// `npm run test:unit`: the pure and in-process tests of .mocharc.json, without the ones that
// start processes (the gateway, npm, the key CLI, esbuild, codegen), redis-server or a browser.
module.exports = {
  ...require('./.mocharc.json'),
  ignore: [
    'test/e2e/**',
    'test/docs/**',
    'test/generated/**',
    'test/bench/compiledGateway.test.ts',
    'test/lifecycle/shutdownProcess.test.ts',
    'test/local/keysCli.test.ts',
    'test/limits/redisLimiter.test.ts',
    'test/limits/redisStore.test.ts',
    'test/usage/sharedCeiling.test.ts',
    'test/usage/redisClusterUsage.test.ts',
    'test/usage/redisUsageBuffer.test.ts',
    'test/usage/usageRedisProcess.test.ts',
  ],
  reporter: 'dot',
};
