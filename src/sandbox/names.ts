import { createHash } from 'node:crypto';

interface NameList {
  first: readonly string[];
  last: readonly string[];
}

function words(...lines: string[]): string[] {
  return lines.flatMap((line) => line.split(' '));
}

/**
 * Plausible account holders per country, so that a name enquiry in the sandbox reads like one
 * from that country's switch (NIP in Nigeria, M-Pesa in Kenya, GhIPSS in Ghana).
 */
const NAMES = {
  NG: {
    first: words(
      'Adaeze Chinedu Ngozi Emeka Oluwaseun Folake Tunde Aisha Ibrahim Funmilayo',
      'Obinna Chiamaka Yusuf Temitope Ifeanyi Hauwa Kelechi Bukola Segun Zainab',
    ),
    last: words(
      'Okonkwo Adeyemi Bello Eze Okafor Ogunleye Abubakar Nwosu Adebayo Musa',
      'Chukwu Balogun Okoro Lawal Nnamdi Afolabi Danjuma Obi Oyelaran Ibekwe',
    ),
  },
  KE: {
    first: words(
      'Wanjiku Faith Achieng Brian Njeri Kipchoge Wambui Mercy Akinyi Kevin',
      'Nyambura Grace Chebet Dennis Atieno Peter Jepkosgei Joyce Moraa Collins',
    ),
    last: words(
      'Mwangi Odhiambo Kiprotich Wanjala Kamau Ochieng Njoroge Kibet Muthoni Otieno',
      'Cheruiyot Waweru Onyango Korir Gitau Barasa Kimani Rotich Nyaga Owino',
    ),
  },
  GH: {
    first: words(
      'Kwame Akosua Kofi Ama Yaw Abena Kwabena Efua Kojo Adwoa',
      'Kwaku Afua Nana Esi Fiifi Yaa Kwesi Akua Ekow Adjoa',
    ),
    last: words(
      'Mensah Asante Owusu Boateng Appiah Osei Agyeman Darko Ofori Amoah',
      'Addo Antwi Quaye Tetteh Sarpong Frimpong Acheampong Bonsu Opoku Nkansah',
    ),
  },
} satisfies Record<string, NameList>;

const PAN_AFRICAN: NameList = {
  first: Object.values(NAMES).flatMap((n) => n.first),
  last: Object.values(NAMES).flatMap((n) => n.last),
};

/**
 * The name an institution holds for an account: the same provider code and account number give
 * the same name on every call, upper-case as switches return it. A country without its own list
 * (a corridor added to the configuration later) draws from all of them.
 */
export function accountHolderName(country: string, providerCode: string, accountNumber: string): string {
  const list: NameList = Object.hasOwn(NAMES, country) ? NAMES[country as keyof typeof NAMES] : PAN_AFRICAN;
  const digest = createHash('sha256').update(`${providerCode}:${accountNumber}`).digest();
  const first = list.first[digest.readUInt32BE(0) % list.first.length];
  const last = list.last[digest.readUInt32BE(4) % list.last.length];
  return `${first} ${last}`.toUpperCase();
}
