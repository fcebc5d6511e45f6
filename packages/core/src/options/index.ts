/**
 * `@floodgate/core/options`: the named option checks every Floodgate package validates its
 * options with, so each bad option gets the same message shape
 * (`<name>: expected <what>, got <value>`) and the same error (`OptionsError`,
 * `FG_ERR_OPTIONS_INVALID`), and the table of every error and warning code. For people writing
 * an adapter or a store.
 * @module @floodgate/core/options
 */
export {
  checkBoolean,
  checkFunction,
  checkFunctionMap,
  checkIntInRange,
  checkKnownKeys,
  checkLogger,
  checkMethods,
  checkNumberInRange,
  checkObject,
  checkOneOf,
  checkPositiveInt,
  checkPositiveNumber,
  describeValue,
  misuseError,
  optionError,
  optionsConflict,
  refusedOption,
  renamedOption,
} from './checks.js'
export { errorCodes } from '../errors.js'
export { stderrWarnings } from '../logger.js'
