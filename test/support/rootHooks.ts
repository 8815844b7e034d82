import { Agent, setGlobalDispatcher } from 'undici';
import { NockDispatcher } from './nockDispatcher.js';

// Before any test file runs: upstream calls to made-up hosts reach nock (see NockDispatcher).
setGlobalDispatcher(new NockDispatcher(new Agent()));
