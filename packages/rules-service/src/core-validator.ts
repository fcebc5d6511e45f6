import { parseRules, RulesValidationError } from '@floodgate/core'
import type { RulesValidator } from './rules-repository.js'

/**
 * The default validator: core's rule schema, the same one every host applies, so a set the
 * service accepts is a set the hosts accept.
 *
 * @param rules - the whole set
 * @returns every problem as `rules[i].field: message`
 */
export const validateWithCore: RulesValidator = (rules) => {
  try {
    parseRules([...rules])
    return []
  } catch (err) {
    if (err instanceof RulesValidationError) return err.issues
    throw err
  }
}
