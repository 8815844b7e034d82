// `npm run test:processes`: the tests that run the gateway (or the key CLI) as a real process,
// `npm start` included: what a Node line can break that the in-process tests cannot see.
// .ci/run runs them on every supported Node line besides the machine's own.
module.exports = {
  ...require('./.mocharc.json'),
  spec: [
    'test/deploy/productionRun.test.ts',
    'test/e2e/**/*.test.ts',
    'test/http/keysNeverLogged.test.ts',
    'test/http/silentConnections.test.ts',
    'test/lifecycle/shutdownProcess.test.ts',
    'test/lifecycle/startupFailures.test.ts',
    'test/local/keysCli.test.ts',
    'test/local/upstreamsCli.test.ts',
    'test/telemetry/tracing.test.ts',
    'test/usage/deliveredAnswers.test.ts',
    'test/usage/usageRedisProcess.test.ts',
  ],
  reporter: 'dot',
};
